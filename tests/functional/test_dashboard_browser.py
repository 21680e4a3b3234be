"""The dashboard in a real headless browser (Debian's chromium + chromedriver, selenium).

    host1 (8 VCPU, 4096 MB, 40 GB)         host2 (same)
      vm (small: 1 VCPU, 512 MB, 5 GB)  -- resize to large (2, 1024, 10) -->

The page is opened once; the resize and its confirmation are made through the
Compute API while the browser watches: the page must show, without being
reloaded, the migration's allocation on host1 next to the instance's on
host2 and VERIFY_RESIZE, then the move gone and the server ACTIVE. Then the
browser follows host2's "Plan drain" link: the dry-run plan must name host1
as the server's planned destination (the same plan as the Compute route's).

A screenshot of each state is written to a temporary directory, or to the
directory `STOWAGE_DASHBOARD_SCREENSHOTS` names -- which is how the ones in
docs/images/ are made (docs/dashboard.md gives the command). SQLite only:
the HTTP tests (test_dashboard_http.py) cover the three databases.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.functional.conftest import Cloud, LiveServer, api_client, reset_cloud, serving
from tests.functional.servers import action, boot, flavor, flavor_id, image

CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1700")
WAIT = 30


@pytest.fixture(scope="module")
def live() -> Iterator[LiveServer]:
    with serving("sqlite") as server:
        yield server


@pytest.fixture
def cloud(live: LiveServer) -> Iterator[Cloud]:
    plane = reset_cloud(live)
    with api_client(f"{live.url}/compute/v2.1",
                    headers={"openstack-api-version": "compute latest"}) as compute, \
            api_client(f"{live.url}/placement",
                       headers={"openstack-api-version": "placement latest"}) as placement:
        yield Cloud(compute, placement, plane, live)
    plane.drain()


@pytest.fixture
def browser() -> Iterator[object]:
    if not Path(CHROMEDRIVER).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMEDRIVER} is missing: .ci/run installs chromium-driver")
        pytest.skip("chromium-driver is not installed (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    with tempfile.TemporaryDirectory(prefix="stowage-chromium-") as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        try:
            yield driver
        finally:
            driver.quit()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    wanted = os.environ.get("STOWAGE_DASHBOARD_SCREENSHOTS")
    folder = Path(wanted) if wanted else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _text(driver: object, css: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.CSS_SELECTOR, css).text)  # type: ignore[attr-defined]


def _wait_for(driver: object, css: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as shown
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT).until(shown.presence_of_element_located((By.CSS_SELECTOR, css)))


def test_the_page_follows_a_resize_and_its_confirmation(cloud: Cloud, browser: object,
                                                        shots: Path) -> None:
    driver = browser
    for name in ("host1", "host2"):
        cloud.add_host(name, vcpus=8, memory_mb=4096, disk_gb=40)
    flavor(cloud, "small", 1, 512, 5)
    flavor(cloud, "large", 2, 1024, 10)
    server_id = boot(cloud, "vm", flavor_id(cloud, "small"), image(cloud))
    driver.get(cloud.live.url + "/")  # type: ignore[attr-defined]
    _wait_for(driver, f'tr.server[data-server="{server_id}"]')
    assert "ACTIVE" in _text(driver, f'tr.server[data-server="{server_id}"] .status')
    _wait_for(driver, "#audit-ok")
    _wait_for(driver, "#no-moves")
    # A mark that only survives if the page is never loaded again.
    driver.execute_script("window.stowageMark = 'same page';")  # type: ignore[attr-defined]
    driver.save_screenshot(str(shots / "dashboard-active.png"))  # type: ignore[attr-defined]

    action(cloud, server_id, {"resize": {"flavorRef": flavor_id(cloud, "large")}})
    _wait_for(driver, "tr.move")
    source = _text(driver, 'tr.move .source-side .holds[data-provider="host1"]')
    dest = _text(driver, 'tr.move .dest-side .holds[data-provider="host2"]')
    assert source == "migration on host1: DISK_GB 5, MEMORY_MB 512, VCPU 1"
    assert dest == "instance on host2: DISK_GB 10, MEMORY_MB 1024, VCPU 2"
    assert _text(driver, "tr.move .server-status").startswith("VERIFY_RESIZE")
    assert "resize" in _text(driver, "tr.move .step")
    _wait_for(driver, f'tr.server[data-server="{server_id}"]')
    _wait_for(driver, "#audit-ok")
    assert _mark(driver) == "same page"
    driver.save_screenshot(str(shots / "dashboard-verify-resize.png"))  # type: ignore[attr-defined]

    action(cloud, server_id, {"confirmResize": None}, status=204)
    _wait_for(driver, "#no-moves")
    row = f'tr.server[data-server="{server_id}"]'
    _wait_for(driver, row)
    assert _text(driver, f"{row} .status") == "ACTIVE"
    assert "host2" in _text(driver, row)
    host1_vcpu = 'article.host[data-host="host1"] .res[data-class="VCPU"] .num'
    assert _text(driver, host1_vcpu).startswith("0 /")
    assert _mark(driver) == "same page"
    driver.save_screenshot(str(shots / "dashboard-confirmed.png"))  # type: ignore[attr-defined]

    _plan_drain(cloud, driver, server_id, shots)
    assert {p.name for p in shots.glob("dashboard-*.png")} >= {
        "dashboard-active.png", "dashboard-verify-resize.png", "dashboard-confirmed.png",
        "dashboard-drain-plan.png"}


def _plan_drain(cloud: Cloud, driver: object, server_id: str, shots: Path) -> None:
    """host2's "Plan drain" link opens its plan: the server would go live to host1."""
    from selenium.webdriver.common.by import By

    route = cloud.compute.get("/os-stowage-drain/host2").json()["drain"]
    link = driver.find_element(  # type: ignore[attr-defined]
        By.CSS_SELECTOR, 'article.host[data-host="host2"] a.plan-drain')
    link.click()
    row = f'tr.planned[data-server="{server_id}"]'
    _wait_for(driver, row)
    assert driver.current_url.endswith("/dashboard/drain/host2")  # type: ignore[attr-defined]
    assert _text(driver, f"{row} td.destination") == "host1"
    assert _text(driver, f"{row} td.action") == "live"
    assert [s["destination"] for s in route["servers"]] == ["host1"]
    assert "servers 1" in _text(driver, "#drain-totals")
    driver.save_screenshot(str(shots / "dashboard-drain-plan.png"))  # type: ignore[attr-defined]


def _mark(driver: object) -> object:
    return driver.execute_script("return window.stowageMark;")  # type: ignore[attr-defined]
