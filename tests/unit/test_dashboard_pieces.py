"""The dashboard's small pieces: which renderer an Accept header picks, paging, addresses."""

from __future__ import annotations

import pytest

from stowage.web.dashboard.access import cookies, is_loopback
from stowage.web.dashboard.paging import BadQuery, Page
from stowage.web.root import _chosen

BOTH = ["application/json", "text/html"]


@pytest.mark.parametrize(("accept", "chosen"), [
    ("", "application/json"),
    ("*/*", "application/json"),
    ("application/json", "application/json"),
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "text/html"),
    ("application/json, text/html", "application/json"),
    ("text/*", "text/html"),
    ("text/html;q=0, */*", "application/json"),
    ("image/png", None),
])
def test_a_type_named_outright_beats_a_wildcard(accept: str, chosen: str | None) -> None:
    assert _chosen(accept, BOTH) == chosen


def test_without_a_dashboard_a_browser_still_gets_json() -> None:
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    assert _chosen(browser, ["application/json"]) == "application/json"
    assert _chosen("text/html", ["application/json"]) is None


def test_pages() -> None:
    page = Page.of({"page": "3", "per_page": "25"})
    assert (page.offset, page.size) == (50, 25)
    assert page.meta(51) == {"page": 3, "per_page": 25, "total": 51, "pages": 3}
    assert Page.of({}).meta(0)["pages"] == 1
    for bad in ({"page": "0"}, {"page": "-1"}, {"per_page": "1e3"}, {"per_page": "201"},
                {"page": "9999999"}):
        with pytest.raises(BadQuery):
            Page.of(bad)


def test_loopback_addresses() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("127.8.9.10") and is_loopback("::1")
    assert not is_loopback("192.0.2.7") and not is_loopback("-")
    assert not is_loopback("::ffff:192.0.2.7")


def test_a_malformed_cookie_header_is_no_cookie() -> None:
    assert cookies({"cookie": "a=1; stowage_dashboard_token=abc"})["stowage_dashboard_token"] \
        == "abc"
    assert cookies({"cookie": '"\x00;;=='}) == {}
