/// Reading an already validated JSON value's parts by their tokens: the providers' message validators and answer
/// decoders (FCM's, Huawei's) walk objects and arrays this way.
extension JSONScanner {
    /// The members of the (already validated) object starting at `offset`, keys decoded; empty for anything else.
    public func members(at offset: Int) -> [(String, JSONToken)] {
        var scanner = self
        scanner.position = offset
        var out: [(String, JSONToken)] = []
        do throws(JSONScanError) {
            try scanner.beginObject()
            var first = true
            while let (key, value) = try scanner.nextMember(first: &first, depth: 2) { out.append((scanner.stringValue(key), value)) }
        } catch {
            return []
        }
        return out
    }

    /// The values of an (already validated) array, as far as they can be read.
    public func elements(of array: JSONToken) -> [JSONToken] {
        guard array.kind == .array else { return [] }
        var scanner = self
        scanner.position = array.range.lowerBound + 1
        var out: [JSONToken] = []
        do throws(JSONScanError) {
            while true {
                scanner.skipWhitespace()
                guard scanner.position < array.range.upperBound - 1 else { break }
                if !out.isEmpty {
                    scanner.position += 1  // the comma
                    scanner.skipWhitespace()
                }
                out.append(try scanner.scanValue(depth: 3))
            }
        } catch {
            return out
        }
        return out
    }
}
