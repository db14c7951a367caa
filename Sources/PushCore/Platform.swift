/// The push service a job goes to. APNs is the default so every producer written before FCM keeps working.
public enum Platform: String, Sendable, Hashable, CaseIterable {
    case apns, fcm
}
