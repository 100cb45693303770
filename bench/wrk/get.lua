-- GET random keys of a loaded set: wrk -s get.lua URL -- PATHS_FILE (one percent-encoded path a line)
dofile(os.getenv("CASSTOR_WRK_DIR") .. "/report.lua")

local paths

function init(args)
  paths = {}
  for line in io.lines(args[1]) do
    table.insert(paths, line)
  end
  assert(#paths > 0, "no path to GET")
  math.randomseed(os.time() + tid)
end

function request()
  return wrk.format("GET", paths[math.random(#paths)])
end
