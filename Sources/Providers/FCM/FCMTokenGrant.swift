import CurlHTTP
import ProviderKit
import PushCore
import Reactor

/// FCM's access-token exchange for `AccessTokenCache`: an RS256 assertion signed with the service account's key
/// (`OAuthAssertion`), traded at the account's `token_uri`.
public enum FCMTokenGrant {
    public static func exchange(_ account: ServiceAccount, options: CurlPost.Options,
                                post: @escaping OAuthTokenEndpoint.Post = OAuthTokenEndpoint.curlPost) -> AccessTokenCache.Exchange {
        {
            let assertion: String
            do {
                assertion = try OAuthAssertion.sign(account, issuedAt: wallClockMillis() / 1000)
            } catch {
                return .failure(.refused("cannot sign the OAuth assertion: \(error)"))
            }
            return OAuthTokenEndpoint.exchange(url: account.tokenURI, form: Array(OAuthAssertion.formBody(assertion: assertion).utf8),
                                               options: options, post: post)
        }
    }
}
