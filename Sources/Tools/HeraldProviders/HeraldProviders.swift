import APNs
import Expo
import FCM
import Harmony
import HMS
import ProviderKit
import WebPush

/// The providers Herald speaks, listed once, at the composition root: one per `Platform` case, in
/// `Platform.allCases` order (the order of their sections in the configuration file, and each one's `slot`). The
/// loader takes this list and the loaded configuration carries it to everything below (`Configuration.providers`),
/// so `Worker` and `API` link no provider. A new provider is a new `Platform` case and its line here
/// (docs/adding-a-provider.md); `ProviderListTests` holds the list to `Platform.allCases`.
public let heraldProviders: [any PushProvider.Type] = [APNsProvider.self, FCMProvider.self, WebPushProvider.self, HMSProvider.self, HarmonyProvider.self, ExpoProvider.self]
