import Basics

/// A multicast job's fan-out, applied by the completion script with the parent's lease release: one child job
/// per token, each `jobPrefix + token + jobSuffix` (the parent's bytes with its `"tokens":[...]` member turned into
/// `"token":"<token>"`), wrapped in an envelope `{"herald":{"queue":…,"attempt":1,"id":"<jobID>","child":<index>,
/// "epoch":…},"job":<child>}` and pushed to the head of the parent's queue, first token taken first. So every
/// token is an ordinary job from then on (its own lease, retries, attempt count and result) and the worker holds
/// no more of them than it claims.
public struct Expansion: Sendable, Equatable {
    /// The id every child's results carry (the producer's, or the one Herald made for the parent).
    public var jobID: String
    /// Hexadecimal device tokens, each once; children are numbered by their index here.
    public var tokens: [String]
    public var jobPrefix: [UInt8]
    public var jobSuffix: [UInt8]

    public init(jobID: String, tokens: [String], jobPrefix: [UInt8], jobSuffix: [UInt8]) {
        self.jobID = jobID
        self.tokens = tokens
        self.jobPrefix = jobPrefix
        self.jobSuffix = jobSuffix
    }

    /// The envelope header up to the child index, as the script completes it.
    func headerPrefix(queue: String) -> [UInt8] {
        var out = JobEnvelope.prefix
        out.append(contentsOf: Array(#""queue":"#.utf8))
        appendJSONString(queue, to: &out)
        out.append(contentsOf: Array(#","attempt":1,"id":"#.utf8))
        appendJSONString(jobID, to: &out)
        out.append(contentsOf: Array(#","child":"#.utf8))
        return out
    }
}

/// What a completion leaves in a job id's idempotency key (`QueueKeys.once(jobID:)`), written only while the key
/// still holds what this worker expects, so a late or repeated completion cannot overwrite another copy's claim.
public struct OnceUpdate: Sendable, Equatable {
    public enum Expect: Sendable, Equatable {
        /// The key names this completion's lease (`QueueScripts.claimOnce` gave it to this copy).
        case lease
        /// The key says `pending`: the job came back from the retry set (a retry or a scheduled job).
        case pending
    }
    public enum State: String, Sendable, Equatable {
        /// The job ended (or fanned out): later copies are duplicates until the key expires.
        case done
        /// The job waits in the retry set: later copies are duplicates; the retry itself needs no check.
        case pending
    }

    public var jobID: String
    public var expect: Expect
    public var state: State

    public init(jobID: String, expect: Expect, state: State) {
        self.jobID = jobID
        self.expect = expect
        self.state = state
    }
}

/// The answer of `QueueScripts.claimOnce` for one job.
public enum OnceVerdict: Sendable, Equatable {
    /// This copy holds the id now: send it.
    case claimed
    /// Another copy of the id was sent, waits for a retry, or is being sent by a live lease.
    case duplicate
    /// The id's key holds another type (not Herald's doing): sent unchecked rather than lost.
    case unguarded
}
