Rails.application.routes.draw do
  # Liveness probe the sandbox platform calls once the boot reports ready (Rails 6.1 has none).
  get "/up" => "health#show", as: :rails_health_check

  # The MCP endpoint the manifest points at; authentication decides before the HTTP method does.
  match "/action_agent/mcp" => "action_agent/mcp#handle", via: :all, as: :action_agent_mcp
end
