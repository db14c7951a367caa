import Basics

/// A JSON document as a tree, for what is built rather than sliced: a neutral notification's overrides and the jobs
/// rendered from it. Numbers keep their text as written, so nothing is rounded on the way through; objects are
/// written with their keys sorted, so one tree always gives the same bytes. Not for the send path (the job parser
/// slices instead).
public enum JSONValue: Sendable, Equatable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    /// A number's text as it is written (`10`, `-1.5e3`).
    case number(String)
    case bool(Bool)
    case null

    public static func int(_ value: Int) -> JSONValue { .number(String(value)) }

    /// A string when there is one: a rendering's optional member.
    public static func text(_ value: String?) -> JSONValue? { value.map(JSONValue.string) }

    /// Reads one JSON document (strict, as the job parser reads one); nil for invalid JSON, and for an object that
    /// names a member twice (which of the two was meant is anyone's guess).
    public init?(parsing bytes: [UInt8]) {
        let tree: JSONValue? = bytes.withUnsafeBufferPointer { buffer in
            guard let token = try? JSONScanner.validate(buffer) else { return nil }
            return JSONValue.read(token, JSONScanner(buffer))
        }
        guard let tree else { return nil }
        self = tree
    }

    private static func read(_ token: JSONToken, _ scanner: JSONScanner) -> JSONValue? {
        switch token.kind {
        case .string: return .string(scanner.stringValue(token))
        case .number: return .number(scanner.text(token))
        case .bool: return .bool(scanner.bytes[token.range.lowerBound] == UInt8(ascii: "t"))
        case .null: return .null
        case .array:
            var elements: [JSONValue] = []
            for element in scanner.elements(of: token) {
                guard let value = read(element, scanner) else { return nil }
                elements.append(value)
            }
            return .array(elements)
        case .object:
            var members: [String: JSONValue] = [:]
            for (key, member) in scanner.members(at: token.range.lowerBound) {
                guard members[key] == nil, let value = read(member, scanner) else { return nil }
                members[key] = value
            }
            return .object(members)
        }
    }

    /// Its compact JSON text, object keys in ascending order.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        write(to: &out)
        return out
    }

    public func write(to out: inout [UInt8]) {
        switch self {
        case .string(let text): appendJSONString(text, to: &out)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .null: out.append(contentsOf: "null".utf8)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendJSONString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                members[key]!.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A member of an object; nil for anything else.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// RFC 7396 JSON Merge Patch: an object in `patch` merges member by member, recursively; `null` removes the
    /// member; anything else (a string, a number, an array) replaces it whole.
    public func merged(with patch: JSONValue) -> JSONValue {
        guard case .object(let changes) = patch else { return patch }
        guard case .object(var members) = self else { return JSONValue.object([:]).merged(with: patch) }
        for (key, change) in changes {
            if change == .null {
                members[key] = nil
            } else {
                members[key] = (members[key] ?? .null).merged(with: change)
            }
        }
        return .object(members)
    }

    /// `value` set at `path` (objects made on the way), replacing what was there: the device's members of a rendered
    /// job, which no override moves.
    public func setting(_ value: JSONValue, at path: ArraySlice<String>) -> JSONValue {
        guard let key = path.first else { return value }
        var members: [String: JSONValue] = [:]
        if case .object(let existing) = self { members = existing }
        members[key] = (members[key] ?? .null).setting(value, at: path.dropFirst())
        return .object(members)
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(Dictionary(uniqueKeysWithValues: elements)) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// The members whose value is given: a rendering lists every member it may write, nil for those it does not.
    public static func present(_ members: KeyValuePairs<String, JSONValue?>) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for (key, value) in members { if let value { out[key] = value } }
        return out
    }
}
