-- wrk script for bench/interface.py: status polls, run submissions, or a mix of both.
--
-- Settings come from the environment (wrk passes nothing else to every thread):
--   ATELIER_KEY           the X-API-KEY
--   ATELIER_IDS           run ids to poll, comma-separated; each thread rotates over them
--   ATELIER_PATH          (optional) a path to GET instead of the runs' statuses (/healthz)
--   ATELIER_BODY_FILE     the JSON body of POST /api/v3/run
--   ATELIER_SUBMIT_EVERY  0: polls only; 1: submissions only; N: one submission in every N requests
--   ATELIER_DEADLINE      (optional) Unix time after which no request is sent; the connections
--                         then wait for their last answer and idle until wrk stops, so every
--                         request sent is answered and counted: 2xx by kind, and other answers
--
-- done() prints one line, "ATELIER_RESULT {json}", with wrk's totals and latency percentiles
-- (microseconds) and, with a deadline, the per-kind counts and the time from the first
-- request to the last answer.

local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_usec; } atelier_timeval;
  int gettimeofday(atelier_timeval *tv, void *tz);
]]
local tv = ffi.new("atelier_timeval")
local function now()
  ffi.C.gettimeofday(tv, nil)
  return tonumber(tv.tv_sec) + tonumber(tv.tv_usec) / 1e6
end

local key = os.getenv("ATELIER_KEY")
local every = tonumber(os.getenv("ATELIER_SUBMIT_EVERY") or "0")
local deadline = tonumber(os.getenv("ATELIER_DEADLINE") or "")

local polls = {}
local submit = nil
local n = 0
local index = 0

-- Per-thread counters, read by done() through thread:get (globals of the thread's state).
sent_polls, sent_submits = 0, 0
ok_polls, ok_submits, bad = 0, 0, 0
first, last = 0, 0

local threads = {}
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("thread_id", thread_count)
  table.insert(threads, thread)
end

function init(args)
  local headers = { ["X-API-KEY"] = key, ["Content-Type"] = "application/json" }
  for id in string.gmatch(os.getenv("ATELIER_IDS") or "", "[^,]+") do
    table.insert(polls, wrk.format("GET", "/api/v3/status/" .. id, headers))
  end
  local path = os.getenv("ATELIER_PATH") or ""
  if path ~= "" then
    polls = { wrk.format("GET", path, headers) }
  end
  if every > 0 then
    local f = assert(io.open(os.getenv("ATELIER_BODY_FILE"), "rb"))
    submit = wrk.format("POST", "/api/v3/run", headers, f:read("*a"))
    f:close()
  end
  -- Threads start at different places in the rotation and in the mix.
  index = (thread_id or 1) * 7
  n = (thread_id or 1) * 3
end

function request()
  n = n + 1
  if deadline and first == 0 then first = now() end
  if every == 1 or (every > 1 and n % every == 0) then
    sent_submits = sent_submits + 1
    return submit
  end
  index = index % #polls + 1
  sent_polls = sent_polls + 1
  return polls[index]
end

if deadline then
  function delay()
    if now() >= deadline then
      return 3600 * 1000
    end
    return 0
  end

  function response(status, headers, body)
    last = now()
    if status < 200 or status >= 300 then
      bad = bad + 1
    elseif every == 1 then
      ok_submits = ok_submits + 1
    elseif every == 0 or string.find(body, '"overall_status"', 1, true) then
      -- A status answer carries overall_status; an accepted run's is {"id", "error": null}.
      ok_polls = ok_polls + 1
    else
      ok_submits = ok_submits + 1
    end
  end
end

function done(summary, latency, requests)
  local t = {
    duration_us = summary.duration,
    requests = summary.requests,
    bytes = summary.bytes,
    connect_errors = summary.errors.connect,
    read_errors = summary.errors.read,
    write_errors = summary.errors.write,
    status_errors = summary.errors.status,
    timeouts = summary.errors.timeout,
    p50_us = latency:percentile(50),
    p90_us = latency:percentile(90),
    p99_us = latency:percentile(99),
    max_us = latency.max,
    mean_us = latency.mean,
  }
  local sums = { "sent_polls", "sent_submits", "ok_polls", "ok_submits", "bad" }
  for _, name in ipairs(sums) do t[name] = 0 end
  local f, l = nil, 0
  for _, thread in ipairs(threads) do
    for _, name in ipairs(sums) do t[name] = t[name] + (thread:get(name) or 0) end
    local tf, tl = thread:get("first") or 0, thread:get("last") or 0
    if tf > 0 and (f == nil or tf < f) then f = tf end
    if tl > l then l = tl end
  end
  t.first = f or 0
  t.last = l
  local parts = {}
  for k, v in pairs(t) do
    table.insert(parts, string.format('"%s": %.17g', k, v))
  end
  io.write("ATELIER_RESULT {" .. table.concat(parts, ", ") .. "}\n")
end
