// stowage dashboard: keeps each section current without reloading the page.
// Every section names the query it was rendered for (data-query); this script asks
// /dashboard/part/<section>?<query> again every few seconds and swaps the HTML in,
// keeping open <details> open. Nothing else: the server renders everything.
"use strict";
(function () {
  const main = document.querySelector("main[data-refresh-ms]");
  if (!main) { return; }
  const every = parseInt(main.dataset.refreshMs, 10) || 2000;
  const live = document.getElementById("live");
  const stamp = document.getElementById("refreshed");
  let busy = false;

  function openDetails(body) {
    return new Set(Array.from(body.querySelectorAll("details[open]"))
      .map((d) => d.parentElement && d.parentElement.dataset.provider));
  }

  async function refresh(section) {
    const body = section.querySelector(".body");
    const url = "/dashboard/part/" + section.dataset.part + "?" + section.dataset.query;
    const resp = await fetch(url, {credentials: "same-origin", redirect: "manual",
                                   headers: {"accept": "text/html"}});
    if (resp.type === "opaqueredirect" || resp.status === 401 || resp.status === 403) {
      window.location.assign("/");
      return;
    }
    if (!resp.ok) { throw new Error(section.dataset.part + ": " + resp.status); }
    const html = await resp.text();
    if (html === section.dataset.last) { return; }
    const opened = openDetails(body);
    body.innerHTML = html;
    section.dataset.last = html;
    body.querySelectorAll("details").forEach((d) => {
      if (d.parentElement && opened.has(d.parentElement.dataset.provider)) { d.open = true; }
    });
  }

  async function tick() {
    if (busy || document.hidden) { return; }
    busy = true;
    try {
      await Promise.all(Array.from(document.querySelectorAll("section[data-part]"))
        .map(refresh));
      live.textContent = "live";
      live.className = "live";
      stamp.textContent = "updated " + new Date().toLocaleTimeString();
      main.dataset.refreshes = String((parseInt(main.dataset.refreshes, 10) || 0) + 1);
    } catch (err) {
      live.textContent = "stale";
      live.className = "live stale";
    } finally {
      busy = false;
    }
  }

  document.querySelectorAll("section[data-part]").forEach((s) => {
    s.dataset.last = s.querySelector(".body").innerHTML;
  });
  window.setInterval(tick, every);
})();
