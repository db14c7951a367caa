import Basics
import PushCore

/// A JSON value as the gorush route reads and writes it: members in their order, numbers as their literal text
/// (so `18446744073709551617` is judged against the Go type it is meant for instead of being rounded or wrapped,
/// and a number in `data` reaches the provider as written). Built from the strict `JSONScanner`.
indirect enum GoJSON: Equatable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([GoJSON])
    case object([(String, GoJSON)])

    static func == (a: GoJSON, b: GoJSON) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.number(let x), .number(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.object(let x), .object(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// The document in `bytes`, or the scanner's reason it is not JSON.
    static func parse(_ bytes: [UInt8]) -> Result<GoJSON, JSONScanError> {
        bytes.withUnsafeBufferPointer { buffer in
            do throws(JSONScanError) {
                let token = try JSONScanner.validate(buffer)
                return .success(value(JSONScanner(buffer), token))
            } catch {
                return .failure(error)
            }
        }
    }

    private static func value(_ scanner: JSONScanner, _ token: JSONToken) -> GoJSON {
        switch token.kind {
        case .null: .null
        case .bool: .bool(scanner.bytes[token.range.lowerBound] == UInt8(ascii: "t"))
        case .number: .number(scanner.text(token))
        case .string: .string(scanner.stringValue(token))
        case .array: .array(scanner.elements(of: token).map { value(scanner, $0) })
        case .object: .object(scanner.members(at: token.range.lowerBound).map { ($0.0, value(scanner, $0.1)) })
        }
    }

    /// The JSON kind in Go's words (`json: cannot unmarshal <kind> into ...`).
    var goKind: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .number(let text): "number \(text)"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    var string: String? { if case .string(let s) = self { s } else { nil } }
    var members: [(String, GoJSON)]? { if case .object(let m) = self { m } else { nil } }

    /// The value of member `name` (the last one, as Go keeps the last of repeated keys).
    subscript(name: String) -> GoJSON? {
        members?.last { $0.0 == name }?.1
    }

    /// `self` with member `name` set to `value` (replacing it in place, else appended); `self` must be an object.
    func setting(_ name: String, _ value: GoJSON) -> GoJSON {
        var list = members ?? []
        if let at = list.lastIndex(where: { $0.0 == name }) { list[at].1 = value } else { list.append((name, value)) }
        return .object(list)
    }

    /// Objects merged member by member, `other` winning; anything else is replaced by `other`.
    func merged(with other: GoJSON) -> GoJSON {
        guard let mine = members, let theirs = other.members else { return other }
        var out = GoJSON.object(mine)
        for (name, value) in theirs { out = out.setting(name, out[name]?.merged(with: value) ?? value) }
        return out
    }

    var bytes: [UInt8] {
        var out: [UInt8] = []
        write(to: &out)
        return out
    }

    func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .string(let s): appendJSONString(s, to: &out)
        case .array(let list):
            out.append(UInt8(ascii: "["))
            for (i, element) in list.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                element.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let list):
            out.append(UInt8(ascii: "{"))
            for (i, (name, value)) in list.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                appendJSONString(name, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}
