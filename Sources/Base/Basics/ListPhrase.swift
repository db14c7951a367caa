extension Array where Element == String {
    /// The items as prose, `conjunction` before the last: "apns, fcm or hms". One home for the phrase that
    /// messages and help texts list their choices with.
    public func joinedAsList(_ conjunction: String) -> String {
        count > 1 ? dropLast().joined(separator: ", ") + " \(conjunction) " + last! : joined()
    }
}
