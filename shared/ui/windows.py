"""How a surface's data windows are named in its A2UI data model: what the host writes and every reader of the
surface stream (the page, web's UI message stream) matches on.

- `/firstWindows`: the keys of the first windows the host is about to send for a revision (a later entry with
  fewer keys: those left out are not coming);
- `/resources/<resource id>/window`: one window, its value naming the block (`node`), the binding prop and the
  offset, which together make its key.
"""

from __future__ import annotations

FIRST_WINDOWS_PATH = "/firstWindows"
_RESOURCES, _WINDOW = "/resources/", "/window"


def window_path(resource_id: str) -> str:
    return f"{_RESOURCES}{resource_id}{_WINDOW}"


def window_key(resource_id: str, node: str, prop: str, offset: int) -> str:
    """`<resource>|<node>|<binding prop>|<offset>`: a block id reused by a later answer over another result never
    matches an earlier answer's rows."""
    return f"{resource_id}|{node}|{prop}|{offset}"


def resource_of_window(path: str) -> str | None:
    """The data-model path of the result a window update belongs to (`/resources/<id>`), or None."""
    if not (path.startswith(_RESOURCES) and path.endswith(_WINDOW)):
        return None
    return path[:-len(_WINDOW)]


def key_of_window(path: str, value: object) -> str | None:
    """The key of a window data-model update (`path`, `value`), or None when it is not one."""
    if not (path.startswith(_RESOURCES) and path.endswith(_WINDOW)) or not isinstance(value, dict):
        return None
    resource = path[len(_RESOURCES):-len(_WINDOW)]
    return window_key(resource, value.get("node"), value.get("prop"), value.get("offset"))
