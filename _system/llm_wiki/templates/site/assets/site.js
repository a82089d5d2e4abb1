/* llm-wiki site: offline search (MiniSearch over the data the search/*.js files carry) and the
   inspector's log filter. Everything is written with textContent: entry text is never HTML. */
(function () {
  "use strict";

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function search() {
    var form = document.getElementById("search-form");
    if (!form || typeof MiniSearch === "undefined") return;
    form.hidden = false;
    var docs = [].concat.apply([], window.LLM_WIKI_SEARCH || []);
    var index = new MiniSearch({
      fields: ["s", "a", "q", "g", "b", "m", "id"],
      storeFields: ["s", "d", "t", "m", "st"],
      searchOptions: { boost: { s: 3, a: 3, q: 2, g: 2, m: 1.5 }, prefix: true, fuzzy: 0.15, combineWith: "AND" }
    });
    index.addAll(docs);
    var input = document.getElementById("q");
    var status = document.getElementById("search-status");
    var list = document.getElementById("results");

    function run(query) {
      list.textContent = "";
      query = (query || "").trim();
      if (!query) {
        status.textContent = docs.length + " entries searchable by summary, aliases, questions, tags and body.";
        return;
      }
      var hits = index.search(query);
      if (!hits.length) hits = index.search(query, { combineWith: "OR" });
      status.textContent = hits.length + (hits.length === 1 ? " entry" : " entries") + " for “" + query + "”";
      hits.slice(0, 100).forEach(function (hit) {
        var li = el("li", "entry status-" + hit.st);
        var a = el("a", "", hit.s);
        a.href = "entries/" + encodeURIComponent(hit.id) + ".html";
        li.appendChild(a);
        var meta = hit.d + " · " + hit.t + " · " + hit.m + (hit.st !== "active" ? " · " + hit.st : "");
        li.appendChild(document.createTextNode(" "));
        li.appendChild(el("span", "meta", meta));
        list.appendChild(li);
      });
    }

    var params = new URLSearchParams(window.location.search);
    input.value = params.get("q") || "";
    run(input.value);
    function remember() {
      try {
        history.replaceState(null, "", "?q=" + encodeURIComponent(input.value));
      } catch (e) { /* file:// in some browsers */ }
    }
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      run(input.value);
      remember();
    });
    var typing = 0;  /* results follow the words as they are typed, never a stale list under them */
    input.addEventListener("input", function () {
      clearTimeout(typing);
      typing = setTimeout(function () { run(input.value); remember(); }, 120);
    });
  }

  function logFilter() {
    var box = document.querySelector(".filter");
    if (!box) return;
    box.hidden = false;
    var op = document.getElementById("op-filter");
    var text = document.getElementById("text-filter");
    var shown = document.getElementById("shown");
    var rows = Array.prototype.slice.call(document.querySelectorAll("table.log tbody tr"));
    function apply() {
      var want = op.value, words = text.value.toLowerCase(), n = 0;
      rows.forEach(function (row) {
        var ok = (!want || row.getAttribute("data-op") === want) &&
          (!words || row.textContent.toLowerCase().indexOf(words) >= 0);
        row.hidden = !ok;
        if (ok) n += 1;
      });
      shown.textContent = n + " of " + rows.length + " shown";
    }
    op.addEventListener("change", apply);
    text.addEventListener("input", apply);
    apply();
  }

  search();
  logFilter();
})();
