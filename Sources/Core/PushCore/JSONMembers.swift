/// Reading an already validated JSON value's parts by their tokens: the providers' message validators and answer
/// decoders (FCM's, Huawei's) walk objects and arrays this way.
extension JSONScanner {
    /// Validates `bytes` as one JSON object (whitespace around it allowed) in a single pass, handing `body` each
    /// top-level member as it is scanned (its value fully validated; compare keys with `stringEquals`, which
    /// decodes nothing). `body`'s first failure is thrown only once the whole document has proved valid, so input
    /// that is not one JSON object always reads as such, whatever its members; after it `body` is not called.
    /// False when `bytes` is not one valid JSON object. One pass instead of a validation and then a walk.
    @inlinable
    public static func scanObject<E: Error>(_ bytes: UnsafeBufferPointer<UInt8>,
                                            _ body: (_ scanner: JSONScanner, _ key: JSONToken, _ value: JSONToken) throws(E) -> Void) throws(E) -> Bool {
        var scanner = JSONScanner(bytes)
        var failure: E? = nil
        do throws(JSONScanError) {
            scanner.skipWhitespace()
            try scanner.beginObject()
            var first = true
            while let (key, value) = try scanner.nextMember(first: &first) {
                if failure != nil { continue }
                do throws(E) { try body(scanner, key, value) } catch { failure = error }
            }
            try scanner.expectEnd()
        } catch {
            return false
        }
        if let failure { throw failure }
        return true
    }

    /// Calls `body` with each member of the (already validated) object starting at `offset`, keys not decoded, as
    /// `members(at:)` lists them, without the list.
    @inlinable
    public func forEachMember<E: Error>(at offset: Int, _ body: (_ key: JSONToken, _ value: JSONToken) throws(E) -> Void) throws(E) {
        var scanner = self
        scanner.position = offset
        var first = true
        guard (try? scanner.beginObject()) != nil else { return }
        while let (key, value) = try? scanner.nextMember(first: &first, depth: 2) { try body(key, value) }
    }

    /// The members of the (already validated) object starting at `offset`, keys decoded; empty for anything else.
    public func members(at offset: Int) -> [(String, JSONToken)] {
        var scanner = self
        scanner.position = offset
        var out: [(String, JSONToken)] = []
        do throws(JSONScanError) {
            try scanner.beginObject()
            var first = true
            while let (key, value) = try scanner.nextMember(first: &first, depth: 2) { out.append((scanner.stringValue(key), value)) }
        } catch {
            return []
        }
        return out
    }

    /// The values of an (already validated) array, as far as they can be read.
    public func elements(of array: JSONToken) -> [JSONToken] {
        guard array.kind == .array else { return [] }
        var scanner = self
        scanner.position = array.range.lowerBound + 1
        var out: [JSONToken] = []
        do throws(JSONScanError) {
            while true {
                scanner.skipWhitespace()
                guard scanner.position < array.range.upperBound - 1 else { break }
                if !out.isEmpty {
                    scanner.position += 1  // the comma
                    scanner.skipWhitespace()
                }
                out.append(try scanner.scanValue(depth: 3))
            }
        } catch {
            return out
        }
        return out
    }
}

/// The members a provider knows in an object it reads: each case's spelling, and the case a key spells. The
/// look-up and the scans above are `@inlinable`, so each provider's module specializes them for its own members
/// and closures instead of going through generic witnesses for every key.
public protocol JSONMemberName: CaseIterable {
    /// Its spelling in the JSON.
    var spelling: StaticString { get }
}

extension JSONMemberName {
    /// The member `key` spells, compared in place (nothing decoded for a key without escapes); nil for another.
    @inlinable
    public init?(_ key: JSONToken, in scanner: JSONScanner) {
        guard let member = Self.allCases.first(where: { scanner.stringEquals(key, $0.spelling) }) else { return nil }
        self = member
    }
}
