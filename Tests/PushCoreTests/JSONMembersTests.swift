import PushCore
import Testing

private struct Refused: Error, Equatable { let key: String }

/// `scanObject`'s members as (key, value text) pairs, or its verdict: false for input that is not one JSON object.
private func scan(_ json: String, refusing refused: String? = nil) -> Result<[String], Refused>? {
    let bytes = Array(json.utf8)
    var seen: [String] = []
    do throws(Refused) {
        let isObject = try bytes.withUnsafeBufferPointer { buffer throws(Refused) in
            try JSONScanner.scanObject(buffer) { (scanner, key, value) throws(Refused) in
                let name = scanner.stringValue(key)
                if name == refused { throw Refused(key: name) }
                seen.append(name + "=" + scanner.text(value))
            }
        }
        return isObject ? .success(seen) : nil
    } catch {
        return .failure(error)
    }
}

@Suite struct JSONMembersTests {
    @Test func scanObjectHandsEveryMemberOnce() {
        #expect(scan(#" {"a":1, "b":{"c":[true,null]},"a":"x"} "#) == .success(["a=1", #"b={"c":[true,null]}"#, #"a="x""#]))
        #expect(scan("{}") == .success([]))
    }

    @Test func notAnObjectIsFalseWhateverTheMembers() {
        for json in ["[1]", "\"a\"", "", "{", #"{"a":1,}"#, #"{"a":1} x"#, #"{"a":tru}"#, #"{"a":1 "b":2}"#] {
            #expect(scan(json) == nil, "\(json)")
        }
        // A member refused before the document turns out to be broken: the document's verdict wins.
        #expect(scan(#"{"a":1,"b":"#, refusing: "a") == nil)
    }

    @Test func aMembersFailureIsThrownOnlyForAWholeObjectAndStopsTheCalls() {
        #expect(scan(#"{"a":1,"b":2,"c":3}"#, refusing: "b") == .failure(Refused(key: "b")))
    }

    @Test func forEachMemberWalksANestedObjectWithoutDecodingKeys() throws {
        let bytes = Array(#"{"n":{"k\u0041":"v","z":[1,2]}}"#.utf8)
        var pairs: [String] = []
        bytes.withUnsafeBufferPointer { buffer in
            let scanner = JSONScanner(buffer)
            scanner.forEachMember(at: 5) { key, value in pairs.append(scanner.stringValue(key) + "=" + scanner.text(value)) }
            scanner.forEachMember(at: 1) { _, _ in pairs.append("not an object") }
        }
        #expect(pairs == [#"kA="v""#, "z=[1,2]"])
    }
}
