-- POST signed provider-A deliveries to WEBHOOK_PATH, cycling through the lines of
-- WEBHOOK_BODIES (`<Stripe-Signature>\t<body>`, made by payments.py sign); thread k of n
-- takes lines k, k+n, k+2n, … so no two requests carry the same event while lines last.
local threads = 0
setup = function(thread)
  thread:set("thread_no", threads)
  threads = threads + 1
end
local lines = {}
local i = 0
init = function()
  for line in io.lines(os.getenv("WEBHOOK_BODIES")) do
    lines[#lines + 1] = line
  end
  i = thread_no
end
local path = os.getenv("WEBHOOK_PATH")
local step = tonumber(os.getenv("WEBHOOK_THREADS") or "1")
request = function()
  local line = lines[(i % #lines) + 1]
  i = i + step
  local tab = line:find("\t", 1, true)
  return wrk.format("POST", path, {["Content-Type"] = "application/json",
    ["Stripe-Signature"] = line:sub(1, tab - 1)}, line:sub(tab + 1))
end
