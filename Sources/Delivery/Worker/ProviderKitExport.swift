/// What a sender stands on (`PushSender`, `Logger`, `ConfigurationError`...) moved below the worker; whoever uses the
/// worker sees it as before.
@_exported import ProviderKit
