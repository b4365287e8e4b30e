"""How a failed Label Studio call reads: ServerError (an InputError) names the server's URL,
what was being done and the cause in one line; reason_of takes the server's short reason from
an error body (never a whole HTML error page)."""

from __future__ import annotations

import json
import re
from typing import Any

from ...errors import InputError


class ServerError(InputError):
    """A Label Studio call failed: names the server URL and what was being done."""

    def __init__(self, url: str, problem: str, *, expected: str | None = None) -> None:
        super().__init__(f"Label Studio at {url}", problem, expected=expected)
        self.url = url


def reason_of(body: Any) -> str:
    """The server's short reason from an error body (JSON detail, not an HTML page)."""
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("message") or ""
        extra = body.get("validation_errors")
        text = f"{detail} {json.dumps(extra, ensure_ascii=False)}" if extra else str(detail)
    elif isinstance(body, str) and "<html" not in body.lower():
        text = body
    else:
        text = ""
    text = re.sub(r"\s+", " ", text).strip()
    return text[:300] + ("…" if len(text) > 300 else "")
