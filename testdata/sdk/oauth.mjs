// The official MCP TypeScript SDK client's OAuth flows against a codecell
// server guarded by OAuth. The client is told nothing but the server's URL
// (and, for client credentials, its credentials): it finds the
// authorization server from the 401's resource_metadata, then
//
//   code:                registers itself (RFC 7591), sends the user to the
//                        authorization endpoint with PKCE and the resource
//                        (RFC 8707), exchanges the code for a token;
//   client_credentials:  asks the token endpoint directly.
//
// The authorization server of the test approves at once; this script plays
// the browser by following the authorization URL and reading the code off
// the redirect. It then calls execute_code with a program that asks
// test.whoami who the caller is, and prints one JSON line:
// {"flow", "ok", "who", "error"}.
//
//   node oauth.mjs code http://127.0.0.1:PORT/mcp
//   node oauth.mjs client_credentials http://127.0.0.1:PORT/mcp CLIENT_ID SECRET ISSUER
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";

const [flow, target, clientId, clientSecret, issuer] = process.argv.slice(2);
const serverUrl = new URL(target);

// A provider for the authorization code flow that keeps everything in
// memory and records where it was told to send the user.
class CodeFlowProvider {
  constructor() {
    this.redirected = undefined;
  }
  get redirectUrl() {
    return "http://127.0.0.1:9/callback"; // never served: the script reads the code off the redirect
  }
  get clientMetadata() {
    return {
      client_name: "codecell-sdk-test",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    };
  }
  clientInformation() { return this.info; }
  saveClientInformation(info) { this.info = info; }
  tokens() { return this.saved; }
  saveTokens(t) { this.saved = t; }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
  redirectToAuthorization(url) { this.redirected = url; }
}

async function whoami(transport) {
  const client = new Client({ name: "codecell-oauth-test", version: "1" });
  await client.connect(transport);
  const res = await client.callTool({ name: "execute_code", arguments: { code: "await test.whoami({})" } });
  await client.close();
  if (res.isError) throw new Error("execute_code failed: " + JSON.stringify(res.content));
  return res.structuredContent.result;
}

async function codeFlow() {
  const provider = new CodeFlowProvider();
  const first = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
  const client = new Client({ name: "codecell-oauth-test", version: "1" });
  try {
    await client.connect(first);
    throw new Error("connected without a token");
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  if (!provider.redirected) throw new Error("the SDK did not start the authorization");
  const auth = new URL(provider.redirected);
  // The user's browser: the authorization server redirects back at once.
  const resp = await fetch(auth, { redirect: "manual" });
  const location = resp.headers.get("location");
  if (resp.status !== 302 || !location) throw new Error(`authorize: ${resp.status} ${await resp.text()}`);
  const code = new URL(location).searchParams.get("code");
  await first.finishAuth(code);
  const steps = {
    registered: !!provider.info?.client_id,
    pkce: auth.searchParams.get("code_challenge_method"),
    resource: auth.searchParams.get("resource"),
    scope: auth.searchParams.get("scope"),
  };
  const who = await whoami(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider }));
  return { steps, who, client_id: provider.info.client_id };
}

async function clientCredentials() {
  const provider = new ClientCredentialsProvider({ clientId, clientSecret, expectedIssuer: issuer, scope: "mcp tools:read" });
  const who = await whoami(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider }));
  return { who };
}

try {
  const out = flow === "code" ? await codeFlow() : await clientCredentials();
  console.log(JSON.stringify({ flow, ok: true, ...out }));
} catch (e) {
  console.log(JSON.stringify({ flow, ok: false, error: String(e && e.stack || e) }));
  process.exit(1);
}
