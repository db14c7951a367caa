import PushCore

/// The neutral notifications every provider's rendering tests render (docs/notifications.md): one with every member,
/// and one with only its title.
public enum NotificationFixtures {
    /// Every member, a German and a Brazilian Portuguese variant.
    public static let fullJSON = #"""
        {"title":"Shipped","subtitle":"Order 17","body":"Arrives Tuesday","image":"https://cdn.example.com/17.png",
         "sound":"default","badge":3,"data":{"order":"17"},"url":"https://shop.example.com/orders/17","category":"ORDER",
         "thread":"orders","collapse_key":"order-17","time_sensitive":true,
         "localized":{"de":{"title":"Versandt","body":"Kommt Dienstag"},"pt-BR":{"title":"Enviado"}}}
        """#

    public static var full: NeutralNotification { try! NeutralNotification.read(Array(fullJSON.utf8)) }
    public static let minimal = NeutralNotification(title: "Hi")


    /// A browser's push subscription (docs/job-format.md's example).
    public static let webPushSubscription: JSONValue = [
        "endpoint": "https://fcm.googleapis.com/fcm/send/dE4bVbXWlO0:APA91bGJy7Qx", "expirationTime": .null,
        "keys": ["p256dh": "BAMApOOcWEP-epMr1Jy8Vqhr42iIUrvKnKb9wq9yqskISOhihFPSnKPorfVQgSld2DXjJwrCqtUDqk09vdujvqw", "auth": "huUOa-UY7eaS5zzkoq2ZHg"],
    ]
}
