# Answers 200 once the application has booted; it does not touch the database.
class HealthController < ActionController::API
  def show
    render plain: "ok\n"
  end
end
