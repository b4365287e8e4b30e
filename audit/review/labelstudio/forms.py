"""Label Studio's own HTML forms, driven as a person would: sign-up (the only way CE makes an
account that can log in, see client.Server.ensure_account) and the login that sign_in uses.
Django forms: GET the page for its CSRF cookie, then POST the fields."""

from __future__ import annotations

import html
import re
from typing import Any

from .errors import ServerError


def form_errors(page: str) -> str:
    """The field errors Label Studio's sign-up / login pages list, as one line."""
    found = re.findall(r'<ul class="field_errors">(.*?)</ul>', page, flags=re.S)
    found += re.findall(r'<p class="error">(.*?)</p>', page, flags=re.S)
    items = [html.unescape(re.sub(r"<[^>]+>", " ", chunk)) for chunk in found]
    text = re.sub(r"\s+", " ", " ".join(items)).strip()
    return text[:300] or "the page gave no reason"


def form_session(url: str, timeout: float = 60.0) -> Any:
    import httpx
    return httpx.Client(base_url=url, follow_redirects=False, timeout=timeout)


def post_form(client: Any, path: str, fields: dict) -> Any:
    """GET a Django form page for its CSRF cookie, then POST the fields to it."""
    client.get(path).raise_for_status()
    token = client.cookies.get("csrftoken") or ""
    return client.post(path, data={**fields, "csrfmiddlewaretoken": token},
                       headers={"Referer": f"{client.base_url}{path}"})


def _whoami(client: Any) -> str:
    response = client.get("/api/current-user/whoami")
    return (response.json().get("email") or "") if response.status_code == 200 else ""


def sign_up(url: str, email: str, password: str, invite_token: str) -> None:
    """Create an account through the sign-up form; check the new session is that user."""
    import httpx
    try:
        with form_session(url) as client:
            response = post_form(client, f"/user/signup/?token={invite_token}",
                                  {"email": email, "password": password})
            if response.status_code != 302:
                problem = (f"HTTP {response.status_code}" if response.status_code != 200
                           else form_errors(response.text))
                raise ServerError(url, f"sign up {email}: {problem}",
                                  expected="an email no account uses yet")
            if _whoami(client).lower() != email.lower():
                raise ServerError(url, f"sign up {email}: the new session is not that user")
    except httpx.HTTPError as error:
        raise ServerError(url, f"sign up {email}: cannot reach the server "
                          f"({type(error).__name__})") from None
