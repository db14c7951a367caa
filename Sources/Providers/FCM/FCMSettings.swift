import ProviderKit

/// FCM HTTP v1: where messages go (tests point `url` at the simulator; each service account's `token_uri` names
/// its token endpoint) and how the connections to it behave: the shared OAuth-bearer sender's settings.
public typealias FCMSettings = BearerPoolSettings

extension BearerPoolSettings {
    /// FCM's: Google's host, the shared defaults for the rest.
    public static var fcm: BearerPoolSettings { BearerPoolSettings(url: "https://fcm.googleapis.com:443") }
}
