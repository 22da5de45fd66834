/** The object of one session: a tenant's session id, so two tenants never share one. */
export function sessionObjectName(tenant: string, sessionId: string): string {
  return JSON.stringify([tenant, sessionId]);
}
