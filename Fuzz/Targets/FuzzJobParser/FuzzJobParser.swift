import APNs
import FuzzSupport
import HeraldProviders
import ProviderKit
import PushCore

/// Every provider's job members, as the worker's parser has them.
private let members = heraldProviders.jobMembers

/// The worker's hot path on producer bytes: it must never trap, and what it accepts must be what it promises.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJobParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    let parsed: JobSpec
    do {
        parsed = try heraldProviders.read(input, table: members)
    } catch {
        _ = error.description  // every error can be shown to an operator
        return 0
    }
    let valid = input.withUnsafeBufferPointer { (try? JSONScanner.validate($0))?.kind == .object }
    fuzzCheck(valid, "accepted a job that is not one JSON object")
    guard parsed.platform == APNsProvider.platform else { return 0 }
    // An APNs job the worker would go on with: what APNs' reading promises of it.
    let apns: APNsJob
    do { apns = try APNsProvider.readJob(input, spec: parsed) } catch { fuzzCheck(false, "APNs refused a job it had read: \(error)"); return 0 }
    let token = parsed.token ?? parsed.tokens?.first ?? ""
    fuzzCheck(apns.channel != nil || isHexToken(token), "accepted token '\(token)' that is not hex")
    fuzzCheck(JSONScanner.isObject(parsed.payload), "payload is not a JSON object")
    fuzzCheck(fuzzContains(input, parsed.payload), "payload is not a byte slice of the job")
    // The worker's next step on an accepted job: its own pre-send checks.
    let notification = apns.notification(parsed, topic: parsed.topic ?? "com.example.app", environment: apns.environment ?? .production,
                                         bundleID: "com.example.app")
    _ = NotificationValidator.validate(notification, bundleID: "com.example.app")?.description
    return 0
}
