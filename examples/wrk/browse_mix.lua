-- A varied browse/search mix for wrk, against a catalogue seeded by examples/seed_catalog.rs:
--   wrk -t2 -c32 -d10s --latency -s examples/wrk/browse_mix.lua http://127.0.0.1:8080
-- Each request picks a sort, an optional filter, an optional search term and a page at random,
-- so the total-count cache sees many distinct filters rather than one hot query.
local sorts = {"recent", "popular", "price_asc", "price_desc", "quality", "trust"}
local categories = {"data", "services", "products", "documents", "compute", "capital", "ip"}
local verticals = {"research-data", "compute-gpu", "music", "legal", "energy", "training-data"}
local words = {"red", "guitar", "vintage", "camera", "market", "solar", "freight", "soil", "clinic", "patent"}
local prices = {"all", "paid", "free"}

math.randomseed(42)

request = function()
  local q = "limit=50&sort=" .. sorts[math.random(#sorts)]
  local pick = math.random(6)
  if pick == 1 then
    q = q .. "&category=" .. categories[math.random(#categories)]
  elseif pick == 2 then
    q = q .. "&vertical=" .. verticals[math.random(#verticals)]
  elseif pick == 3 then
    q = q .. "&q=" .. words[math.random(#words)]
  elseif pick == 4 then
    q = q .. "&q=" .. words[math.random(#words)] .. "%20" .. words[math.random(#words)]
  elseif pick == 5 then
    q = q .. "&price=" .. prices[math.random(#prices)] .. "&min_rating=" .. math.random(1, 4)
  end
  q = q .. "&offset=" .. (50 * math.random(0, 20))
  return wrk.format("GET", "/api/marketplace/listings?" .. q)
end
