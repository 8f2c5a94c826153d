require "json"

namespace :action_agent do
  namespace :sandbox do
    desc "Mint or reuse the sandbox runtime API key and write the MCP manifest to " \
         "$ACTION_AGENT_SANDBOX_MANIFEST"
    task manifest: :environment do
      path = ENV["ACTION_AGENT_SANDBOX_MANIFEST"].to_s
      if path.empty?
        abort "action_agent:sandbox:manifest: ACTION_AGENT_SANDBOX_MANIFEST is not set; " \
              "it must name the file to write the manifest to"
      end

      key = ApiKey.mint_or_reuse!(ApiKey::SANDBOX_RUNTIME_NAME)
      manifest = JSON.generate(mcp_path: "/action_agent/mcp", mcp_token: key.token)
      File.open(path, File::WRONLY | File::CREAT | File::TRUNC, 0o600) do |file|
        file.write(manifest)
      end
      puts "action_agent:sandbox:manifest: wrote #{path}"
    end
  end
end
