/*
 * Requests to the /v1 API. Locally a loopback request without a key is the dev tenant; deployed,
 * the first 401 asks for a key once and keeps it in sessionStorage, so it goes when the tab does.
 */

export const apiScript = String.raw`
const TOKEN_KEY = "cf-sessions:token";

class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** The envelope in words, as shown to the person using the page. */
  describe() {
    let text = this.code + ": " + this.message;
    if (this.status) text += " (HTTP " + this.status + ")";
    if (this.code === "unauthorized") text += ". Use “API token…” to enter a key.";
    const issues = Array.isArray(this.details) ? this.details : [];
    for (const issue of issues.slice(0, 3)) {
      if (issue && issue.message) text += "\n• " + (Array.isArray(issue.path) && issue.path.length > 0 ? issue.path.join(".") + ": " : "") + issue.message;
    }
    return text;
  }
}

function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

let tokenPrompt = null;
// Once the person cancels, background requests (polling) must not reopen the dialog every 2 s.
let tokenDeclined = false;

/** Resolves true when a token was entered; one dialog however many requests were refused. */
function askToken(reason) {
  if (tokenPrompt) return tokenPrompt;
  const dialog = document.getElementById("token-dialog");
  const input = document.getElementById("token-input");
  document.getElementById("token-reason").textContent = reason;
  input.value = "";
  dialog.returnValue = "";
  tokenPrompt = new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => {
        tokenPrompt = null;
        const token = input.value.trim();
        input.value = "";
        if (dialog.returnValue === "ok" && token) {
          sessionStorage.setItem(TOKEN_KEY, token);
          tokenDeclined = false;
          resolve(true);
        } else {
          tokenDeclined = true;
          resolve(false);
        }
      },
      { once: true },
    );
    dialog.showModal();
    input.focus();
  });
  return tokenPrompt;
}

async function readResponse(response) {
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  if (response.ok) return body;
  const envelope = body && typeof body === "object" ? body.error : null;
  if (envelope && envelope.code) throw new ApiError(response.status, envelope.code, envelope.message || "", envelope.details);
  throw new ApiError(response.status, "http_" + response.status, text || response.statusText || "request failed");
}

/** A JSON request; API errors come back as ApiError with the envelope's code and message. */
async function api(method, path, body) {
  for (let attempt = 0; ; attempt++) {
    const token = storedToken();
    const headers = { Accept: "application/json" };
    if (token) headers.Authorization = "Bearer " + token;
    const init = { method, headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      throw new ApiError(0, "network", "the service could not be reached (" + (error && error.message) + ")");
    }
    if (response.status === 401 && attempt < 3) {
      const current = storedToken();
      // Another request may have been given a new token while this one was in flight.
      if (current && current !== token) continue;
      if (token) sessionStorage.removeItem(TOKEN_KEY);
      if (!tokenDeclined) {
        const reason = token ? "The service refused that token. Enter another one." : "This service needs an API key.";
        if (await askToken(reason)) continue;
      }
    }
    return readResponse(response);
  }
}

function sessionPath(sid, rest) {
  return "/v1/sessions/" + encodeURIComponent(sid) + (rest || "");
}
`;
