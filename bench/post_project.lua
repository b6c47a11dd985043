-- POST /projects with a distinct name per request (so slugs do not collide).
dofile("bench/numbered_post.lua")
numbered_post("/api/v1/projects", "Authorization", function(n)
  return '{"name":"Bench ' .. n .. '","product_type":"SaaS"}'
end)
