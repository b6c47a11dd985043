-- POST /projects/small/churn-events with a distinct customer per request.
counter = 0
request = function()
  counter = counter + 1
  local body = '{"customer_email":"bench' .. counter .. '@example.com","event_type":"cancellation","cancel_reason":"too_expensive","mrr":4900}'
  return wrk.format("POST", "/api/v1/projects/small/churn-events", {["Content-Type"] = "application/json", ["X-API-Key"] = wrk.headers["X-API-Key"]}, body)
end
