import APNs
import Foundation
import FuzzSupport
import PushCore

/// The strict scanner against Foundation's parser, and its member walk against its whole-document check.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONScanner(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    input.withUnsafeBufferPointer { buffer in
        let token: JSONToken
        do {
            token = try JSONScanner.validate(buffer)
        } catch {
            _ = String(describing: error)
            return
        }
        var scanner = JSONScanner(buffer)
        scanner.skipWhitespace()
        fuzzCheck(token.range.lowerBound == scanner.position, "token does not start after the leading whitespace")
        readBack(token, scanner)
        if token.kind == .object { walkMembers(buffer, end: token.range.upperBound) }
        // Accepted by the strict scanner means accepted by Foundation (fragments allowed: any top-level value),
        // except numbers beyond Double's range, which RFC 8259 allows and Foundation refuses.
        if mayOverflowDouble(input) { return }
        let foundation = try? JSONSerialization.jsonObject(with: Data(input), options: [.fragmentsAllowed])
        fuzzCheck(foundation != nil, "scanner accepted what JSONSerialization rejects")
    }
    return 0
}

/// Decoding a scanned value never traps and agrees with its own flags.
private func readBack(_ token: JSONToken, _ scanner: JSONScanner) {
    switch token.kind {
    case .string: _ = scanner.stringValue(token)
    case .number:
        let text = scanner.text(token)
        if token.isInteger, let value = Int64(text) { fuzzCheck(scanner.int64Value(token) == value, "int64Value(\(text))") }
        if !token.isInteger { fuzzCheck(scanner.int64Value(token) == nil, "int64Value of a fraction \(text)") }
    default: break
    }
}

/// Walking the object member by member ends where the whole-document scan ended, reading every member.
private func walkMembers(_ buffer: UnsafeBufferPointer<UInt8>, end: Int) {
    var scanner = JSONScanner(buffer)
    do {
        try scanner.beginObject()
        var first = true
        while let (key, value) = try scanner.nextMember(first: &first) {
            fuzzCheck(key.kind == .string, "a key that is not a string")
            _ = scanner.stringValue(key)
            readBack(value, scanner)
        }
    } catch {
        fuzzCheck(false, "member walk failed on a valid object: \(error)")
    }
    fuzzCheck(scanner.position == end, "member walk ended at \(scanner.position), not \(end)")
}

/// An exponent or a very long digit run anywhere (strings included, which only skips a few more inputs).
private func mayOverflowDouble(_ input: [UInt8]) -> Bool {
    var digits = 0
    var previous: UInt8 = 0
    for b in input {
        let isDigit = b >= 0x30 && b <= 0x39
        digits = isDigit ? digits + 1 : 0
        if digits > 300 { return true }
        if (b == UInt8(ascii: "e") || b == UInt8(ascii: "E")) && (previous >= 0x30 && previous <= 0x39) { return true }
        previous = b
    }
    return false
}
