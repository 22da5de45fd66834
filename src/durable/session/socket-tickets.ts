import { randomHex } from "../../core/bytes";

/*
 * One-time tickets that open a session's WebSocket (browsers cannot set headers on one, and a key
 * in a URL ends up in logs): minted for a caller who may read the session, good once within
 * TICKET_MS, kept in the object's storage so any instance redeems them.
 */

/** How long a WebSocket ticket stays good. */
const TICKET_MS = 60_000;
const PREFIX = "ticket:";

export class SocketTickets {
  readonly #storage: DurableObjectStorage;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
  }

  /** A new ticket; the expired ones are dropped on the way. */
  async mint(): Promise<{ ticket: string; expiresAt: string }> {
    const now = Date.now();
    const ticket = randomHex(24);
    await this.#storage.put(`${PREFIX}${ticket}`, now + TICKET_MS);
    const stale = await this.#storage.list<number>({ prefix: PREFIX });
    const expired = [...stale].filter(([, expiry]) => expiry < now).map(([key]) => key);
    if (expired.length > 0) await this.#storage.delete(expired);
    return { ticket, expiresAt: new Date(now + TICKET_MS).toISOString() };
  }

  /** Whether a ticket is good, using it up either way. */
  async redeem(ticket: string): Promise<boolean> {
    const key = `${PREFIX}${ticket}`;
    const expiry = await this.#storage.get<number>(key);
    if (expiry === undefined) return false;
    await this.#storage.delete(key);
    return expiry >= Date.now();
  }
}
