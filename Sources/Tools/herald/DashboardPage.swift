/// The dashboard's one page: HTML, CSS and script inline, nothing fetched from elsewhere (no CDN, no fonts),
/// so it works on an isolated network. It polls `/api/status` every second and draws the chart as SVG.
enum DashboardPage {
    static let html = #"""
<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Herald</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
:root{--bg:#0f1419;--panel:#1a2129;--text:#e6e6e6;--dim:#8b949e;--delivered:#3fb950;--retrying:#d29922;--token_dropped:#58a6ff;--failed:#f85149;--rejected:#bc8cff;--channel_dropped:#39c5cf;--duplicate:#8b949e;--other:#6e7681}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--text);font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif}
header{display:flex;justify-content:space-between;align-items:baseline;padding:14px 20px;border-bottom:1px solid #30363d}
h1{margin:0;font-size:20px}h2{margin:0 0 8px;font-size:13px;color:var(--dim);text-transform:uppercase;letter-spacing:.05em}
#state{color:var(--dim)}#state.bad{color:var(--failed)}
main{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:14px;padding:14px 20px}
section{background:var(--panel);border-radius:8px;padding:12px 14px}section.wide{grid-column:1/-1}
.big{font-size:30px;font-weight:600}.kv{display:flex;justify-content:space-between;padding:2px 0}.kv span:last-child{font-variant-numeric:tabular-nums}
table{width:100%;border-collapse:collapse}td,th{text-align:left;padding:3px 4px;font-variant-numeric:tabular-nums}th{color:var(--dim);font-weight:normal}
td.n{text-align:right}.legend span{margin-right:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
.dim{color:var(--dim)}.warn{color:var(--failed)}
</style></head><body>
<header><h1>Herald</h1><span id="state">connecting…</span></header>
<main>
<section><h2>Queues</h2><div class="big" id="queue-total">–</div><div id="queues"></div></section>
<section><h2>Latency (last minute)</h2><div class="kv"><span>p50</span><span id="p50">–</span></div>
<div class="kv"><span>p99</span><span id="p99">–</span></div>
<div class="kv"><span>in flight</span><span id="in-flight">–</span></div>
<div class="kv"><span>dropped tokens / min</span><span id="dropped-rate">–</span></div></section>
<section><h2>Retry backlog</h2><div class="big" id="retry-size">–</div>
<div class="kv"><span>due now</span><span id="retry-due">–</span></div>
<div class="kv"><span>next due</span><span id="retry-next">–</span></div>
<div class="kv"><span>dead letters</span><span id="dead-letters">–</span></div>
<div class="kv"><span>results stream</span><span id="results-length">–</span></div></section>
<section class="wide"><h2>Throughput by outcome (10 s slots, last 10 minutes)</h2>
<div class="legend" id="legend"></div><svg id="chart" width="100%" height="180" role="img" aria-label="throughput chart"></svg></section>
<section><h2>Outcomes (last 10 minutes)</h2><table id="totals"></table></section>
<section><h2>Top failure reasons (5 min)</h2><table id="reasons"></table></section>
<section><h2>Workers</h2><table id="workers"></table></section>
<section><h2>Paused apps</h2><div id="paused" class="dim">none</div></section>
</main>
<script>
"use strict";
let outcomes=[];
const $=id=>document.getElementById(id);
const known=["delivered","retrying","token_dropped","channel_dropped","failed","rejected","duplicate"];
const color=o=>`var(--${known.includes(o)?o:"other"})`;
const esc=s=>String(s).replace(/[&<>"]/g,c=>({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"}[c]));
const num=n=>n==null?"–":Number(n).toLocaleString("en-US");
function rows(el,list,cols){el.innerHTML=list.length?list.map(r=>"<tr>"+cols.map(c=>`<td class="${c.n?"n":""}" ${c.id?`id="${c.id(r)}"`:""}>${esc(c.f(r))}</td>`).join("")+"</tr>").join(""):'<tr><td class="dim">none</td></tr>'}
function chart(t,now){
  const svg=$("chart"),w=svg.clientWidth||800,h=180,slot=t.slot_s*1000,n=60,start=now-now%slot-(n-1)*slot;
  const by=new Map(t.slots.map(s=>[s.start_ms,s.counts]));let max=1;
  for(let i=0;i<n;i++){const c=by.get(start+i*slot)||{};max=Math.max(max,outcomes.reduce((a,o)=>a+(c[o]||0),0))}
  const bw=w/n;let out="";
  for(let i=0;i<n;i++){const c=by.get(start+i*slot)||{};let y=h-16;
    for(const o of outcomes){const v=c[o]||0;if(!v)continue;const bh=v/max*(h-30);y-=bh;
      out+=`<rect x="${(i*bw+1).toFixed(1)}" y="${y.toFixed(1)}" width="${(bw-2).toFixed(1)}" height="${bh.toFixed(1)}" fill="${color(o)}"><title>${o}: ${v}</title></rect>`}}
  out+=`<text x="0" y="${h-2}" fill="#8b949e" font-size="11">−10 min</text><text x="${w-28}" y="${h-2}" fill="#8b949e" font-size="11">now</text>`;
  out+=`<text x="${w-4}" y="12" fill="#8b949e" font-size="11" text-anchor="end">max ${num(max)} / 10 s</text>`;
  svg.innerHTML=out;
}
function render(s){
  if(outcomes.join()!==s.throughput.outcomes.join()){outcomes=s.throughput.outcomes;
    $("legend").innerHTML=outcomes.map(o=>`<span><i style="background:${color(o)}"></i>${esc(o)}</span>`).join("")}
  $("state").textContent=s.redis==="ok"?"live · "+new Date(s.now_ms).toLocaleTimeString():"redis: "+s.redis;
  $("state").className=s.redis==="ok"?"":"bad";
  $("queue-total").textContent=num(s.queue_total);
  $("queues").innerHTML=s.queues.map(q=>`<div class="kv"><span>${esc(q.name)}${q.paused?" <b>(paused)</b>":""}</span><span>${num(q.length)}</span></div>`).join("");
  $("p50").textContent=s.latency_ms.p50==null?"–":s.latency_ms.p50+" ms";
  $("p99").textContent=s.latency_ms.p99==null?"–":s.latency_ms.p99+" ms";
  $("in-flight").textContent=num(s.in_flight);$("dropped-rate").textContent=num(s.dropped_tokens_per_minute);
  $("retry-size").textContent=num(s.retry.size);$("retry-due").textContent=num(s.retry.due);
  const nd=s.retry.next_due_in_s;$("retry-next").textContent=nd==null?"–":nd<=0?"now":"in "+nd.toFixed(1)+" s";
  $("dead-letters").textContent=num(s.dead_letters);$("results-length").textContent=num(s.results_length);
  rows($("totals"),outcomes.map(o=>({o,v:s.totals[o],m:s.last_minute[o]})),[{f:r=>r.o},{f:r=>num(r.v),n:1,id:r=>"total-"+r.o},{f:r=>num(r.m)+" /min",n:1}]);
  rows($("reasons"),s.top_reasons,[{f:r=>r.reason},{f:r=>num(r.count),n:1}]);
  rows($("workers"),s.workers,[{f:r=>r.id},{f:r=>(r.live?"":"expired · ")+r.heartbeat_age_s.toFixed(1)+" s ago"},{f:r=>num(r.in_flight)+" in flight",n:1}]);
  $("paused").innerHTML=s.paused_apps.length?s.paused_apps.map(a=>`<div class="warn">${esc(a)}</div>`).join(""):"none";
  $("paused").className=s.paused_apps.length?"":"dim";
  chart(s.throughput,s.now_ms);
}
async function poll(){
  try{const r=await fetch("/api/status",{cache:"no-store"});render(await r.json())}
  catch(e){$("state").textContent="dashboard unreachable";$("state").className="bad"}
  setTimeout(poll,1000);
}
poll();
</script></body></html>
"""#
}
