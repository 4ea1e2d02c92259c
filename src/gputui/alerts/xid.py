"""What an XID code means and NVIDIA's recommended action, read from the shipped `xid.toml`.

Data, not code: a new XID or a corrected action is one table in that file, whose
header names the NVIDIA document each row comes from. A row not checked against the
catalog's text says so in the action ("(unverified)"), and a code not in the file says
"unknown XID, see NVIDIA's XID catalog": never a confident wrong action.
"""

from __future__ import annotations

from functools import lru_cache

from gputui.core.resources import xid_catalog_path
from gputui.model.record import record

# The catalog's "Resolution Bucket (Immediate Action)" values, in gputui's words.
ACTIONS = {
    "restart_app": "restart the application",
    "reset_gpu": "reset the GPU",
    "reboot_node": "reboot the node",
    "contact_support": "contact NVIDIA support",
    "none": "no action needed",
}
CHECKED = ("catalog", "nvidia", "unverified")
UNKNOWN = "unknown XID, see NVIDIA's XID catalog"


@record
class XidInfo:
    code: int
    meaning: str
    action: str  # a key of ACTIONS
    checked: str  # one of CHECKED

    @property
    def action_text(self) -> str:
        text = ACTIONS[self.action]
        return f"{text} (unverified)" if self.checked == "unverified" else text


def _row(entry: object, at: str) -> XidInfo:
    if not isinstance(entry, dict):
        raise ValueError(f"{at}: not a table")
    code, meaning = entry.get("code"), entry.get("meaning")
    action, checked = entry.get("action"), entry.get("checked")
    if isinstance(code, bool) or not isinstance(code, int) or not 0 < code < 1 << 16:
        raise ValueError(f"{at}.code: not an XID code")
    if not isinstance(meaning, str) or not meaning:
        raise ValueError(f"{at}.meaning: not text")
    if action not in ACTIONS:
        raise ValueError(f"{at}.action: not one of {', '.join(ACTIONS)}")
    if checked not in CHECKED:
        raise ValueError(f"{at}.checked: not one of {', '.join(CHECKED)}")
    return XidInfo(code, meaning, str(action), str(checked))


@lru_cache(maxsize=1)
def xid_catalog() -> dict[int, XidInfo]:
    """Every XID the shipped file lists, by code (read once)."""
    from gputui.core.tomlsafe import read_toml

    _, data = read_toml(xid_catalog_path(), what="XID catalog", max_bytes=1 << 20, max_depth=4)
    rows = data.get("xid")
    if not isinstance(rows, list):
        raise ValueError("xid.toml: no [[xid]] tables")
    out: dict[int, XidInfo] = {}
    for i, entry in enumerate(rows):
        info = _row(entry, f"xid[{i}]")
        if info.code in out:
            raise ValueError(f"xid[{i}].code: {info.code} listed twice")
        out[info.code] = info
    return out


def describe_xid(code: int) -> tuple[str, str | None, str]:
    """(meaning, action key or None when unknown, action text) for an XID code."""
    info = xid_catalog().get(code)
    if info is None:
        return UNKNOWN, None, UNKNOWN
    return info.meaning, info.action, info.action_text
