// Passkeys in the page: enrolling one (from a one-time link's sign-in; a further one confirmed by one the
// person has) and signing a decision with it.
// The page only carries what the authenticator made; the broker verifies it, so neither this page's server
// nor anything between it and the broker can approve for the person.

function toBase64url(buffer) {
  const bytes = new Uint8Array(buffer);
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64url(text) {
  const padded = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

export function passkeysSupported() {
  return Boolean(window.PublicKeyCredential && navigator.credentials);
}

// Create a passkey from the broker's registration options (WebAuthn JSON); what the page posts back.
export async function createPasskey(options) {
  const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(options);
  const credential = await navigator.credentials.create({ publicKey });
  return credential.toJSON();
}

async function sha256(text) {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

// The 32 bytes a decision's signature covers (the broker computes the same from what it receives, see
// shared/identity/decisions.py): SHA-256 of the compact JSON array [purpose, approval, arguments hash, decision,
// entry decisions, nonce, SHA-256 of the reason].
export async function decisionChallenge(approvalId, argumentsSha256, approve, entries, nonce, reason) {
  const decided = [...entries].sort().map((id) => [id, 'approve']);
  const reasonSha256 = Array.from(await sha256(reason), (b) => b.toString(16).padStart(2, '0')).join('');
  return sha256(JSON.stringify(['tessera.decision.v1', approvalId, argumentsSha256, approve ? 'approve' : 'reject',
    decided, nonce, reasonSha256]));
}

// Ask the person's authenticator (with user verification) to sign a decision; the body field web forwards.
export async function signDecision(begun, approvalId, argumentsSha256, approve, entries, reason) {
  const challenge = await decisionChallenge(approvalId, argumentsSha256, approve, entries, begun.nonce, reason);
  return signChallenge(challenge, begun.rp_id, begun.credential_ids);
}

// The 32 bytes an existing passkey signs to let a new one in (the broker computes the same, see
// services/capabilities/enrollment.py): SHA-256 of the compact JSON array [purpose, enrollment, the new
// credential's id, the registration challenge].
export function enrollmentChallenge(enrollmentId, credentialId, registrationChallenge) {
  return sha256(JSON.stringify(['tessera.enrollment.v1', enrollmentId, credentialId, registrationChallenge]));
}

// A person who has a passkey confirms a new one with it: the assertion web forwards with the registration.
export async function confirmWithExisting(enrollment, credential) {
  const challenge = await enrollmentChallenge(enrollment.enrollment_id, credential.id, enrollment.options.challenge);
  return signChallenge(challenge, enrollment.options.rp.id, enrollment.existing_credential_ids);
}

async function signChallenge(challenge, rpId, credentialIds) {
  const credential = await navigator.credentials.get({ publicKey: {
    challenge, rpId, userVerification: 'required', timeout: 120000,
    allowCredentials: credentialIds.map((id) => ({ type: 'public-key', id: fromBase64url(id) })),
  } });
  const response = credential.response;
  return { id: credential.id, authenticator_data: toBase64url(response.authenticatorData),
    client_data_json: toBase64url(response.clientDataJSON), signature: toBase64url(response.signature),
    user_handle: response.userHandle ? toBase64url(response.userHandle) : '' };
}
