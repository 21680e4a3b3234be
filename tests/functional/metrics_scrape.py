"""Reading `GET /metrics` in tests: every sample by name and labels, and what changed."""

from __future__ import annotations

from collections.abc import Mapping

import httpx
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Samples", "by_label", "delta", "scrape", "series", "value"]

Key = tuple[str, frozenset[tuple[str, str]]]
Samples = dict[Key, float]


def scrape(client: httpx.Client, url: str = "/metrics") -> Samples:
    """Every sample of one scrape, keyed by its name and labels."""
    resp = client.get(url)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain; version=0.0.4")
    found: Samples = {}
    for family in text_string_to_metric_families(resp.text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample named so with exactly these labels (0 when absent: a counter not moved)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def series(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """Every sample of `name`, by its labels."""
    return {labels: v for (n, labels), v in samples.items() if n == name}


def by_label(samples: Samples, name: str, *keys: str) -> Mapping[tuple[str, ...], float]:
    """The samples of `name` keyed by the values of `keys`."""
    return {tuple(dict(labels)[k] for k in keys): v
            for labels, v in series(samples, name).items()}
