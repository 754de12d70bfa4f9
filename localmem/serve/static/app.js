// localmem serve: progress for ask and import, the timeline's interaction, keyboard shortcuts.
// Every page works without this file. Text from the server is put in with textContent; the
// only HTML inserted is what the server rendered (and escaped) itself.
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="csrf"]').content;

  async function* lines(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let at;
      while ((at = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 1);
        if (line.trim()) yield JSON.parse(line);
      }
    }
    if (buffer.trim()) yield JSON.parse(buffer);
  }

  function say(box, text, cls) {
    box.replaceChildren();
    const p = document.createElement("p");
    p.textContent = text;
    if (cls) p.className = cls;
    box.appendChild(p);
    return p;
  }

  // -- ask: the stages the server reports as they start, with the time waited, the answer as it
  // is written, then the server's rendering of it. Stages and times are the server's real ones;
  // only the counter of the current stage ticks here between two events.
  const form = document.querySelector("form.search");
  const live = document.getElementById("ask-live");
  if (form && live) {
    form.addEventListener("submit", async (event) => {
      if (!event.submitter || event.submitter.value !== "ask") return;
      event.preventDefault();
      const q = form.querySelector("#q").value.trim();
      if (!q) return;
      for (const old of document.querySelectorAll("main .answer, main .hits, main h2, main .summary")) old.remove();
      // The question and the filters set (empty ones left out), as the form would send them.
      const params = new URLSearchParams();
      for (const [name, value] of new FormData(form)) if (value && name !== "do") params.set(name, value);
      history.replaceState(null, "", "/?" + params + "&do=ask");
      live.replaceChildren();
      const stages = document.createElement("ol");
      stages.className = "stages";
      stages.setAttribute("aria-label", "What the answer waits for");
      live.appendChild(stages);
      const written = document.createElement("p");
      written.className = "answer-text";
      live.appendChild(written);
      const started = performance.now();
      let current = null;
      const seconds = (ms) => (ms / 1000).toFixed(1) + " s";
      const stage = (name, words) => {
        const now = performance.now();
        if (current) {
          current.li.classList.replace("current", "done");
          current.time.textContent = seconds(now - current.at);
        }
        const li = document.createElement("li");
        li.className = "current";
        li.dataset.stage = name;
        const text = document.createElement("span");
        text.textContent = words.charAt(0).toUpperCase() + words.slice(1);
        const time = document.createElement("span");
        time.className = "elapsed";
        li.append(text, " ", time);
        stages.appendChild(li);
        current = { li, time, at: now };
      };
      const tick = setInterval(() => {
        if (current) current.time.textContent = seconds(performance.now() - current.at);
        stages.title = "waiting " + seconds(performance.now() - started);
      }, 200);
      stage("send", "sending the question");
      try {
        const response = await fetch("/ask/stream?" + params, { credentials: "same-origin" });
        for await (const ev of lines(response)) {
          if (ev.event === "text") {
            if (current && current.li.dataset.stage !== "write") stage("write", "writing the answer");
            written.textContent += ev.text;
          } else if (ev.event === "progress") stage(ev.stage || "wait", ev.message);
          else if (ev.event === "html") {
            clearInterval(tick);
            const total = seconds(performance.now() - started);
            live.replaceChildren();
            live.insertAdjacentHTML("beforeend", ev.html);
            const took = document.createElement("p");
            took.className = "note took";
            took.textContent = "Answered in " + total + ".";
            live.appendChild(took);
          } else if (ev.event === "error") {
            clearInterval(tick);
            say(live, ev.error.error + (ev.error.hint ? "; " + ev.error.hint : ""), "error");
          }
        }
      } catch (err) {
        say(live, "The answer did not arrive: " + err, "error");
      } finally {
        clearInterval(tick);
      }
    });
  }

  // -- import: upload with a progress bar, then the summary ----------------------------------
  const importForm = document.getElementById("import-form");
  if (importForm) {
    const drop = document.getElementById("drop");
    const input = document.getElementById("file");
    const box = document.getElementById("import-progress");
    drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
    drop.addEventListener("dragleave", () => drop.classList.remove("over"));
    drop.addEventListener("drop", (e) => {
      e.preventDefault();
      drop.classList.remove("over");
      if (e.dataTransfer.files.length) { input.files = e.dataTransfer.files; importForm.requestSubmit(); }
    });
    importForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!input.files.length) return;
      const data = new FormData(importForm);
      box.replaceChildren();
      const label = say(box, "Uploading " + input.files[0].name + "…", "note");
      const bar = document.createElement("progress");
      bar.id = "import-bar";
      bar.setAttribute("aria-label", "Import progress");
      box.appendChild(bar);
      try {
        const response = await fetch("/api/ingest", {
          method: "POST", body: data, credentials: "same-origin", headers: { "X-CSRF-Token": csrf },
        });
        if (!response.ok) {
          const err = await response.json();
          say(box, err.error + (err.hint ? "; " + err.hint : ""), "error");
          return;
        }
        for await (const ev of lines(response)) {
          if (ev.event === "progress" && ev.total) {
            bar.max = ev.total; bar.value = ev.done;
            label.textContent = "Stored " + ev.done + " of " + ev.total + " messages…";
          } else if (ev.event === "report") {
            bar.max = 1; bar.value = 1;
            const html = await fetch("/curate/report", {
              method: "POST", body: JSON.stringify(ev.report), credentials: "same-origin",
              headers: { "X-CSRF-Token": csrf, "Content-Type": "application/json" },
            });
            box.replaceChildren(bar);
            box.insertAdjacentHTML("beforeend", await html.text());
          } else if (ev.event === "error") {
            say(box, ev.error.error + (ev.error.hint ? "; " + ev.error.hint : ""), "error");
          }
        }
      } catch (err) {
        say(box, "The import stopped: " + err, "error");
      }
    });
  }

  // -- timeline: arrows move between bars, the focused bar is described -----------------------
  const chart = document.getElementById("chart");
  if (chart) {
    const bars = Array.from(chart.querySelectorAll("a.bar"));
    const info = document.getElementById("chart-info");
    const show = (bar) => {
      for (const b of bars) b.classList.toggle("selected", b === bar);
      if (info) info.textContent = bar.getAttribute("aria-label");
    };
    bars.forEach((bar, i) => {
      bar.addEventListener("focus", () => show(bar));
      bar.addEventListener("mouseenter", () => show(bar));
      bar.addEventListener("keydown", (e) => {
        const to = e.key === "ArrowRight" ? i + 1 : e.key === "ArrowLeft" ? i - 1 :
          e.key === "Home" ? 0 : e.key === "End" ? bars.length - 1 : null;
        if (to === null || !bars[to]) return;
        e.preventDefault();
        bars[to].focus();
        bars[to].scrollIntoView({ block: "nearest", inline: "nearest" });
      });
    });
  }

  // -- the menu: on a phone it scrolls sideways; the current page's entry is brought into view --
  const current = document.querySelector("header nav a[aria-current=page]");
  if (current && current.parentElement.scrollWidth > current.parentElement.clientWidth) {
    current.parentElement.scrollLeft = current.offsetLeft - current.parentElement.offsetLeft - 16;
  }

  // -- shortcuts: "/" search, "g" then a letter for a page, j/k between items ------------------
  const pages = { s: "/", o: "/overview", v: "/conversations", t: "/timeline", p: "/people", c: "/curate", g: "/settings" };
  let pendingG = false;
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const tag = (e.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select") {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    if (pendingG) {
      pendingG = false;
      if (pages[e.key]) { e.preventDefault(); location.href = pages[e.key]; }
      return;
    }
    if (e.key === "g") { pendingG = true; setTimeout(() => { pendingG = false; }, 1500); return; }
    if (e.key === "/") {
      const q = document.getElementById("q");
      if (q) { e.preventDefault(); q.focus(); q.select(); } else { location.href = "/"; }
      return;
    }
    if (e.key === "j" || e.key === "k") {
      const items = Array.from(document.querySelectorAll("main .item, main .msg"));
      if (!items.length) return;
      const at = items.indexOf(document.activeElement);
      const next = items[Math.max(0, Math.min(items.length - 1, at + (e.key === "j" ? 1 : -1)))];
      next.tabIndex = -1;
      next.focus();
      next.scrollIntoView({ block: "nearest" });
      e.preventDefault();
    }
  });
})();
