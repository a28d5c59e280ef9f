"""Security headers on every response web sends (§2): the page runs only its own script, in no frame.

- Content-Security-Policy: scripts, style sheets, images, fonts and connections from this origin only (no
  inline script, no eval, no <style> elements; style attributes are allowed), no plugins, no <base>
  rewriting, forms post only here, and no framing at all;
- X-Content-Type-Options: nosniff; Referrer-Policy: no-referrer (a surface link never leaks in a Referer);
- Permissions-Policy: every powerful feature off except WebAuthn on this origin, which passkeys need.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'", "script-src 'self'", "style-src 'self'",
    # Style attributes only (no <style> elements, no inline script): the chart library writes its tooltips and
    # SVG with style attributes, which cannot run code.
    "style-src-attr 'unsafe-inline'", "img-src 'self' data:", "font-src 'self'",
    "connect-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
])
PERMISSIONS_POLICY = ", ".join([
    "camera=()", "microphone=()", "geolocation=()", "payment=()", "usb=()", "serial=()", "hid=()",
    "bluetooth=()", "display-capture=()", "clipboard-read=()", "interest-cohort=()",
    "publickey-credentials-get=(self)", "publickey-credentials-create=(self)",
])
HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "permissions-policy": PERMISSIONS_POLICY,
    "cross-origin-opener-policy": "same-origin",
    "x-frame-options": "DENY",  # for browsers that predate frame-ancestors
}


class SecurityHeaders:
    """ASGI middleware: adds HEADERS to every HTTP response (a handler's own value of one wins)."""

    def __init__(self, app: ASGIApp, strict_transport: bool = False) -> None:
        self.app = app
        self.headers = dict(HEADERS)
        if strict_transport:  # only when served over https: it pins the browser to https for a year
            self.headers["strict-transport-security"] = "max-age=31536000"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k.encode(), v.encode()) for k, v in self.headers.items() if k.encode() not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)
