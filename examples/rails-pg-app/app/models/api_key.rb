require "digest"
require "active_support/core_ext/securerandom"

# A bearer token for the MCP endpoint. The token itself is kept (this is a throwaway
# development database) so that a second manifest run hands out the same one; requests are
# looked up by its SHA-256 digest.
class ApiKey < ApplicationRecord
  SANDBOX_RUNTIME_NAME = "Checkout sandbox runtime".freeze
  TOKEN_PREFIX = "aa_".freeze

  validates :name, presence: true
  validates :token, presence: true, format: { with: /\Aaa_[1-9A-HJ-NP-Za-km-z]{32}\z/ }
  validates :token_digest, presence: true, uniqueness: true

  def self.digest(token)
    Digest::SHA256.hexdigest(token)
  end

  def self.generate_token
    TOKEN_PREFIX + SecureRandom.base58(32)
  end

  def self.authenticate(token)
    find_by(token_digest: digest(token))
  end

  # Returns the key named +name+, minting it on first use.
  def self.mint_or_reuse!(name)
    transaction do
      find_by(name: name) || begin
        token = generate_token
        create!(name: name, token: token, token_digest: digest(token))
      end
    end
  end
end
