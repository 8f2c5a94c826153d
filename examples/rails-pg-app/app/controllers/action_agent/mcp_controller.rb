require "json"

module ActionAgent
  # A minimal MCP (JSON-RPC 2.0 over streamable HTTP) endpoint: enough to authenticate a
  # client with its bearer token and answer `initialize`, `ping` and `tools/list`.
  class McpController < ActionController::API
    PROTOCOL_VERSION = "2025-03-26".freeze
    SERVER_INFO = { name: "rails-pg-app", version: "1.0.0" }.freeze

    before_action :authenticate!

    def handle
      return head(:method_not_allowed, allow: "POST") unless request.post?

      message = JSON.parse(request.raw_post)
      return rpc_error(nil, -32600, "Invalid Request", :bad_request) unless message.is_a?(Hash)
      return head(:accepted) unless message.key?("id") # a notification gets no answer

      answer(message)
    rescue JSON::ParserError
      rpc_error(nil, -32700, "Parse error", :bad_request)
    end

    private

    def answer(message)
      id = message["id"]
      case message["method"]
      when "initialize"
        params = message["params"].is_a?(Hash) ? message["params"] : {}
        rpc_result(id, protocolVersion: params["protocolVersion"] || PROTOCOL_VERSION,
                       capabilities: { tools: {} }, serverInfo: SERVER_INFO)
      when "ping"
        rpc_result(id, {})
      when "tools/list"
        rpc_result(id, tools: [])
      else
        rpc_error(id, -32601, "Method not found")
      end
    end

    def rpc_result(id, result)
      render json: { jsonrpc: "2.0", id: id, result: result }
    end

    def rpc_error(id, code, text, status = :ok)
      render json: { jsonrpc: "2.0", id: id, error: { code: code, message: text } }, status: status
    end

    def authenticate!
      token = request.authorization.to_s[/\ABearer +(\S+)\z/, 1]
      return if token && ApiKey.authenticate(token)

      response.headers["WWW-Authenticate"] = 'Bearer realm="action_agent"'
      render json: { error: "unauthorized" }, status: :unauthorized
    end
  end
end
