@testable import PushCore
import Testing

/// The neutral notification (docs/notifications.md): its reader's members, bounds and refusals, the choice of a
/// locale's variant, and the JSON tree rendering builds on.
@Suite struct NeutralNotificationTests {
    private func read(_ text: String) throws(NotificationError) -> NeutralNotification { try NeutralNotification.read(Array(text.utf8)) }

    private func refusal(_ text: String) -> NotificationError? {
        do { _ = try read(text); return nil } catch { return error }
    }

    @Test func everyMemberIsReadAsWritten() throws {
        let n = try read(#"""
            {"title":"Shipped","subtitle":"Order 17","body":"Arrives Tuesday","image":"https://cdn.example.com/17.png",
             "sound":"default","badge":3,"data":{"order":"17","kind":"parcel"},"url":"myshop://orders/17","category":"ORDER",
             "thread":"orders","collapse_key":"order-17","time_sensitive":true,
             "overrides":{"apns":{"push_type":"alert"},"expo":{"payload":{"channelId":"orders"}}},
             "localized":{"de":{"title":"Versandt"}}}
            """#)
        var expected = NeutralNotification(title: "Shipped", body: "Arrives Tuesday", subtitle: "Order 17", image: "https://cdn.example.com/17.png",
                                           sound: "default", badge: 3, data: ["order": "17", "kind": "parcel"], url: "myshop://orders/17",
                                           category: "ORDER", thread: "orders", collapseKey: "order-17", timeSensitive: true)
        expected.overrides = [.apns: ["push_type": "alert"], .expo: ["payload": ["channelId": "orders"]]]
        expected.localized = ["de": .init(title: "Versandt")]
        #expect(n == expected)
    }

    @Test func aTitleAloneIsANotificationAndNullIsAbsent() throws {
        #expect(try read(#"{"title":"Hi"}"#) == NeutralNotification(title: "Hi"))
        #expect(try read(#"{"title":"Hi","body":null,"badge":null,"time_sensitive":null,"data":null,"overrides":null}"#) == NeutralNotification(title: "Hi"))
        #expect(refusal(#"{"body":"no title"}"#)?.code == "missing_title")
    }

    @Test func eachFaultIsRefusedWithItsCodeAndTheMemberNamed() {
        let cases: [(String, String, String)] = [
            ("{", "not_json", "not valid JSON"),
            (#"{"title":"a","title":"b"}"#, "not_json", "names a member twice"),
            (#"["title"]"#, "not_object", "must be a JSON object"),
            (#"{"title":""}"#, "wrong_type", "title must be a non-empty string"),
            (#"{"title":3}"#, "wrong_type", "title must be a non-empty string"),
            (#"{"title":"a","badge":"3"}"#, "wrong_type", "badge must be an integer"),
            (#"{"title":"a","badge":1.5}"#, "wrong_type", "badge must be an integer"),
            (#"{"title":"a","badge":true}"#, "wrong_type", "badge must be an integer"),
            (#"{"title":"a","badge":-1}"#, "out_of_range", "badge must be from 0"),
            (#"{"title":"a","time_sensitive":"yes"}"#, "wrong_type", "time_sensitive must be true or false"),
            (#"{"title":"a","data":{"count":3}}"#, "wrong_type", "data.count must be a string"),
            (#"{"title":"a","data":["x"]}"#, "wrong_type", "data must be an object of strings"),
            (#"{"title":"a","data":{"url":"x"}}"#, "reserved_data_key", "data.url"),
            (#"{"title":"a","data":{"google.c.a":"x"}}"#, "reserved_data_key", "data.google.c.a"),
            (#"{"title":"a","data":{"aps":"x"}}"#, "reserved_data_key", "data.aps"),
            (#"{"title":"a","image":"http://cdn.example.com/a.png"}"#, "bad_url", "image must be an https URL"),
            (#"{"title":"a","url":"orders/17"}"#, "bad_url", "url must be an absolute URL"),
            (#"{"title":"a","url":"https://x.example/a b"}"#, "bad_url", "url must be an absolute URL"),
            (#"{"title":"a","titel":"b"}"#, "unknown_member", "titel is not a member of a notification"),
            (#"{"title":"a","overrides":{"ios":{}}}"#, "bad_override", "overrides.ios is not a platform"),
            (#"{"title":"a","overrides":{"apns":[]}}"#, "wrong_type", "overrides.apns must be an object"),
            (#"{"title":"a","localized":{"de!":{}}}"#, "bad_locale", "localized.de! is not a locale tag"),
            (#"{"title":"a","localized":{"pt-BR":{},"pt_br":{}}}"#, "bad_locale", "are the same locale"),
            (#"{"title":"a","localized":{"de":{"sound":"x"}}}"#, "unknown_member", "localized.de.sound is not a member of a locale's variant"),
            (#"{"title":"a","localized":{"de":{"image":"http://x.example/a.png"}}}"#, "bad_url", "localized.de.image must be an https URL"),
            (#"{"title":"a","collapse_key":"\#(String(repeating: "k", count: 65))"}"#, "too_long", "collapse_key is 65 bytes; at most 64"),
            (#"{"title":"\#(String(repeating: "t", count: 513))"}"#, "too_long", "title is 513 bytes; at most 512"),
        ]
        for (text, code, words) in cases {
            let error = refusal(text)
            #expect(error?.code == code, "\(text): \(String(describing: error))")
            #expect(error?.description.contains(words) == true, "\(text): \(String(describing: error))")
        }
    }

    @Test func theBoundsOnSizeAndCountsHold() {
        let bigData = (0...NeutralNotification.maxDataMembers).map { #""k\#($0)":"v""# }.joined(separator: ",")
        #expect(refusal(#"{"title":"a","data":{\#(bigData)}}"#)?.description == "data has 65 members; at most 64")
        let heavy = (0..<2).map { #""k\#($0)":"\#(String(repeating: "v", count: 1600))""# }.joined(separator: ",")
        #expect(refusal(#"{"title":"a","data":{\#(heavy)}}"#)?.description == "data's keys and values are 3204 bytes; at most 3072")
        let huge = #"{"title":"a","body":"\#(String(repeating: "b", count: NeutralNotification.maxBytes))"}"#
        #expect(refusal(huge)?.code == "too_large")
        let fits = (0..<NeutralNotification.maxDataMembers).map { #""k\#($0)":"v""# }.joined(separator: ",")
        #expect(refusal(#"{"title":"a","data":{\#(fits)}}"#) == nil)
    }

    static let variants = NeutralNotification(
        title: "Shipped", body: "Arrives Tuesday", subtitle: "Order 17", url: "https://shop.example.com/orders/17",
        localized: ["de": .init(title: "Versandt", body: "Kommt Dienstag"), "pt-BR": .init(title: "Enviado", url: "https://shop.example.com/br/17"),
                    "pt": .init(title: "Expedido")])

    @Test func aDeviceGetsTheVariantOfItsExactTagWhateverItsCaseOrSeparator() {
        for tag in ["pt-BR", "pt_BR", "PT-br", "pt_br"] {
            let chosen = Self.variants.localized(for: tag)
            #expect(chosen.title == "Enviado" && chosen.url == "https://shop.example.com/br/17" && chosen.language == "pt-BR", "\(tag)")
            #expect(chosen.body == "Arrives Tuesday" && chosen.subtitle == "Order 17", "what the variant leaves out stays the base's")
        }
    }

    @Test func aDeviceWithoutAVariantOfItsTagGetsItsLanguagesThenTheBase() {
        #expect(Self.variants.localized(for: "de-AT").title == "Versandt")
        #expect(Self.variants.localized(for: "de_CH").body == "Kommt Dienstag")
        #expect(Self.variants.localized(for: "pt-PT").title == "Expedido", "pt-PT has no variant of its own: Portuguese's")
        #expect(Self.variants.localized(for: "DE").language == "de")
        for tag in ["fr-FR", "en", "", nil] as [String?] {
            let chosen = Self.variants.localized(for: tag)
            #expect(chosen.title == "Shipped" && chosen.language == nil && chosen.localized.isEmpty, "\(String(describing: tag))")
        }
        #expect(Self.variants.localized(for: "portuguese").title == "Shipped", "a language is the tag's first part, not a prefix")
    }

    @Test func aMergePatchMergesObjectsRemovesNullsAndReplacesTheRest() {
        // RFC 7396's own example.
        let target: JSONValue = ["title": "Goodbye!", "author": ["givenName": "John", "familyName": "Doe"], "tags": ["example", "sample"], "content": "x"]
        let patch: JSONValue = ["title": "Hello!", "phoneNumber": "+01-123-456-7890", "author": ["familyName": .null], "tags": ["example"]]
        let expected: JSONValue = ["title": "Hello!", "author": ["givenName": "John"], "tags": ["example"], "content": "x", "phoneNumber": "+01-123-456-7890"]
        #expect(target.merged(with: patch) == expected)
        #expect(JSONValue.string("a").merged(with: ["b": 1]) == ["b": 1])
        #expect(JSONValue.object([:]).setting("t", at: ["message", "token"][...]) == ["message": ["token": "t"]])
        #expect((["message": ["token": ["x": 1], "data": "d"]] as JSONValue).setting("t", at: ["message", "token"][...]) == ["message": ["token": "t", "data": "d"]])
    }

    @Test func aTreeIsWrittenWithSortedKeysAndItsNumbersAsWritten() throws {
        let text = #"{"b":[1.50,-2e3,true,null],"a":{"z":"\u00e9\"","y":{}},"c":12345678901234567890}"#
        let tree = try #require(JSONValue(parsing: Array(text.utf8)))
        #expect(String(decoding: tree.bytes, as: UTF8.self) == #"{"a":{"y":{},"z":"é\""},"b":[1.50,-2e3,true,null],"c":12345678901234567890}"#)
        #expect(JSONValue(parsing: Array(#"{"a":1,"a":2}"#.utf8)) == nil)
        #expect(JSONValue(parsing: Array(#"{"a":{"b":1,"b":1}}"#.utf8)) == nil, "a nested member twice too")
    }
}
