import { showDialog } from "./dom";
import { els } from "./page-elements";

/*
 * The API key. Locally a loopback request without a key is the dev tenant; deployed, the first
 * 401 asks for a key once and keeps it in sessionStorage, so it goes when the tab does.
 */

const TOKEN_KEY = "cf-sessions:token";
// A refused request is asked again at most this many times, each after a new key was entered.
const MAX_PROMPTS = 3;

function storedToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

let tokenPrompt: Promise<boolean> | null = null;
// Once the person cancels, background requests (following a session) must not reopen the dialog.
let tokenDeclined = false;

/** Resolves true when a key was entered; one dialog however many requests were refused. */
function askToken(reason: string): Promise<boolean> {
  if (tokenPrompt) return tokenPrompt;
  const input = els.tokenInput;
  els.tokenReason.textContent = reason;
  input.value = "";
  tokenPrompt = showDialog(els.tokenDialog).then((returned) => {
    tokenPrompt = null;
    const token = input.value.trim();
    input.value = "";
    const entered = returned === "ok" && token !== "";
    if (entered) sessionStorage.setItem(TOKEN_KEY, token);
    tokenDeclined = !entered;
    return entered;
  });
  input.focus();
  return tokenPrompt;
}

/** Asks for a key because the person chose to, even after declining before. */
export function changeToken(): Promise<boolean> {
  tokenDeclined = false;
  return askToken("Enter the API key to use for this tab.");
}

/** After a 401: whether there is now a key to send the request again with. */
async function keyAfterRefusal(refused: string | null): Promise<boolean> {
  const current = storedToken();
  // Another request may have been given a new key while this one was in flight.
  if (current && current !== refused) return true;
  if (refused) sessionStorage.removeItem(TOKEN_KEY);
  if (tokenDeclined) return false;
  return askToken(
    refused ? "The service refused that token. Enter another one." : "This service needs an API key.",
  );
}

/**
 * The page's `fetch` for the client: sends the kept key, and on a 401 asks for one and sends the
 * request again. Without a new key, the refusal is answered as it came.
 */
export async function fetchWithKey(request: Request): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const token = storedToken();
    const sent = request.clone();
    if (token) sent.headers.set("Authorization", `Bearer ${token}`);
    const response = await fetch(sent).catch((error: unknown) => {
      throw new Error(`the service could not be reached (${error instanceof Error ? error.message : error})`);
    });
    if (response.status === 401 && attempt < MAX_PROMPTS && (await keyAfterRefusal(token))) {
      await response.body?.cancel();
      continue;
    }
    return response;
  }
}
