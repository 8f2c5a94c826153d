class CreateApiKeys < ActiveRecord::Migration[6.1]
  def change
    create_table :api_keys do |t|
      t.string :name, null: false
      t.string :token, null: false
      t.string :token_digest, null: false
      t.timestamps
    end
    add_index :api_keys, :name
    add_index :api_keys, :token_digest, unique: true
  end
end
