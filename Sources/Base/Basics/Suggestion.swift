/// "Did you mean": the known word closest to a mistyped one, for the CLI's unknown commands and options and the
/// configuration's unknown keys. Close means an edit distance of at most a third of the word (at least 1, at
/// most 3), so `wroker` finds `worker` but `foo` finds nothing.
public enum Suggestion {
    /// The closest of `known` to `word`, or nil when none is close; the first of equals.
    public static func closest(to word: String, among known: some Sequence<String>) -> String? {
        let typed = Array(word.lowercased().utf8)
        let limit = min(3, max(1, typed.count / 3))
        var best: (word: String, distance: Int)?
        for candidate in known {
            let distance = editDistance(typed, Array(candidate.lowercased().utf8), limit: limit)
            if distance <= limit && distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.word
    }

    /// `text` followed by "; did you mean '<prefix>x'?" when a known word x is close to `word`.
    public static func text(_ text: String, word: String, among known: some Sequence<String>, prefix: String = "") -> String {
        closest(to: word, among: known).map { text + "; did you mean '\(prefix)\($0)'?" } ?? text
    }

    /// Levenshtein distance (a swap of neighbours counts one), cut short past `limit`.
    static func editDistance(_ a: [UInt8], _ b: [UInt8], limit: Int) -> Int {
        if abs(a.count - b.count) > limit { return limit + 1 }
        var before = [Int](0...b.count)
        var previous = before
        var row = before
        for i in 1...max(1, a.count) where !a.isEmpty {
            row[0] = i
            for j in 1...max(1, b.count) where !b.isEmpty {
                row[j] = min(before[j] + 1, row[j - 1] + 1, before[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] { row[j] = min(row[j], previous[j - 2] + 1) }
            }
            previous = before
            before = row
        }
        return a.isEmpty ? b.count : b.isEmpty ? a.count : before[b.count]
    }
}
