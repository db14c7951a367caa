import Foundation
import FuzzSupport
import HeraldProviders
import HeraldTestSupport
@testable import Worker

/// The configuration's numbers at and around their bounds, as a property: what the loader (`check-config`, the
/// worker's start) accepts, the worker's arithmetic runs (`DerivedValues`: back-offs to the last attempt,
/// give-up and expiry times, pauses, the drain deadline), and a refusal names the key of each value out of
/// bounds while never refusing a value within them. Input: per numeric setting one byte choosing a value (left
/// out, the minimum, the maximum, one beyond either, a value inside from the next 8 bytes, beyond Int64, 1e300,
/// a fraction), and a final byte that adds a per-queue retry policy built the same way.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfigurationBounds(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = fuzzInput(data, size)[...]
    func byte() -> UInt8 { input.popFirst() ?? 0 }
    func word() -> UInt64 { (0..<8).reduce(0) { value, _ in value << 8 | UInt64(byte()) } }

    let numeric = Configuration.numericSettings
    var root: [String: Any] = ["apps": [["name": "shop", "bundle_id": "com.example.shop",
                                         "token": ["team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "k.p8"]]]]
    var inBounds = Set<String>()
    var outOfBounds = Set<String>()
    for (key, access) in numeric {
        let choice = byte() % 9
        guard choice != 0 else { continue }
        let value: Any
        switch choice {
        case 1: value = NSNumber(value: Int64(access.minimum))
        case 2: value = NSNumber(value: Int64(access.maximum))
        case 3: value = NSNumber(value: Int64(access.minimum) - 1)
        case 4: value = NSNumber(value: Int64(access.maximum) + 1)
        case 5:
            let span = UInt64(access.maximum - access.minimum) + 1
            value = NSNumber(value: Int64(access.minimum) + Int64(word() % span))
        case 6: value = NSNumber(value: UInt64.max)
        case 7: value = NSNumber(value: 1e300)
        default: value = NSNumber(value: access.minimum + 0.5)
        }
        let number = (value as! NSNumber).doubleValue
        if (1...2).contains(choice) || choice == 5 { inBounds.insert(key) } else if number < access.minimum || number > access.maximum { outOfBounds.insert(key) }
        var section = root[String(key.split(separator: ".")[0])] as? [String: Any] ?? [:]
        section[String(key.split(separator: ".").dropFirst().joined(separator: "."))] = value
        // `redis.tls.*` has no numbers, so one level of nesting is all a numeric key needs.
        root[String(key.split(separator: ".")[0])] = section
    }
    if byte() & 1 == 1 {
        root["redis"] = (root["redis"] as? [String: Any] ?? [:]).merging(["queues": ["q"]]) { _, new in new }
        var overrides: [String: Any] = [:]
        for (key, access) in numeric where key.hasPrefix("retry.") && Configuration.perQueueRetryKeys.contains(String(key.dropFirst("retry.".count)))
            && byte() & 1 == 1 {
            overrides[String(key.dropFirst("retry.".count))] = NSNumber(value: Int64(byte() & 1 == 1 ? access.maximum : access.minimum))
        }
        var retry = root["retry"] as? [String: Any] ?? [:]
        retry["queues"] = ["q": overrides]
        root["retry"] = retry
    }

    do {
        let configuration = try ConfigurationLoader.load(root: root, environment: [:])
        fuzzCheck(outOfBounds.isEmpty, "accepted values out of bounds: \(outOfBounds.sorted())")
        for (key, access) in numeric {
            let value = access.get(configuration)
            fuzzCheck(value >= access.minimum && value <= access.maximum, "\(key) = \(value) loaded outside \(access.minimum)...\(access.maximum)")
        }
        _ = DerivedValues.compute(configuration)
    } catch {
        // A per-queue policy may be refused for a queue the overrides make inconsistent; the globals are what is checked.
        for key in outOfBounds { fuzzCheck(error.problems.contains { $0.hasPrefix("\(key) must be ") }, "\(key) out of bounds but not named: \(error.problems)") }
        for key in inBounds { fuzzCheck(!error.problems.contains { $0.hasPrefix("\(key) must be ") }, "\(key) within bounds but refused: \(error.problems)") }
        fuzzCheck(!error.problems.isEmpty, "refused without naming a problem")
    }
    return 0
}
