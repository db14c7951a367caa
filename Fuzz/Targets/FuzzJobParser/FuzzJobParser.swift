import APNs
import FuzzSupport
import PushCore

/// The worker's hot path on producer bytes: it must never trap, and what it accepts must be what it promises.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJobParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    let parsed: JobSpec
    do {
        parsed = try JobParser.parse(input)
    } catch {
        _ = error.description  // every error can be shown to an operator
        return 0
    }
    let valid = input.withUnsafeBufferPointer { (try? JSONScanner.validate($0))?.kind == .object }
    fuzzCheck(valid, "accepted a job that is not one JSON object")
    let token = parsed.token ?? ""
    fuzzCheck(isHexToken(token), "accepted token '\(token)' that is not hex")
    fuzzCheck(JSONScanner.isObject(parsed.payload), "payload is not a JSON object")
    fuzzCheck(fuzzContains(input, parsed.payload), "payload is not a byte slice of the job")
    // The worker's next step on an accepted job: its own pre-send checks.
    let notification = parsed.notification(topic: parsed.topic ?? "com.example.app", environment: parsed.environment ?? .production)
    _ = NotificationValidator.validate(notification, bundleID: "com.example.app")?.description
    return 0
}
