-- POST /projects/small/churn-events with a distinct customer per request.
dofile("bench/numbered_post.lua")
numbered_post("/api/v1/projects/small/churn-events", "X-API-Key", function(n)
  return '{"customer_email":"bench' .. n .. '@example.com","event_type":"cancellation","cancel_reason":"too_expensive","mrr":4900}'
end)
