import Basics
import Testing

@Suite struct ListPhraseTests {
    @Test func listsItemsWithTheConjunctionBeforeTheLastOnly() {
        #expect(["apns", "fcm", "webpush", "hms"].joinedAsList("or") == "apns, fcm, webpush or hms")
        #expect(["APNs", "FCM"].joinedAsList("and") == "APNs and FCM")
        #expect(["apns"].joinedAsList("or") == "apns")
        #expect([String]().joinedAsList("or") == "")
    }
}
