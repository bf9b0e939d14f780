#include "orchestrator/alerts/alert_sender.h"

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "orchestrator/alerts/alert_message.h"

namespace baton {

namespace {

using Clock = std::chrono::steady_clock;

void SetTimeouts(httplib::Client& c, double s) {
  const time_t sec = static_cast<time_t>(s);
  const time_t usec = static_cast<time_t>((s - static_cast<double>(sec)) * 1e6);
  c.set_connection_timeout(sec, usec);
  c.set_read_timeout(sec, usec);
  c.set_write_timeout(sec, usec);
}

Status PostJson(const AlertSink& sink, const std::string& url, const std::string& key,
                const std::string& body) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) {
    return Status::Config("sink '" + sink.name + "': its URL has no http:// or https:// scheme");
  }
  const size_t slash = url.find('/', scheme + 3);
  const std::string base = url.substr(0, slash);
  const std::string path = slash == std::string::npos ? "/" : url.substr(slash);
  httplib::Client client(base);
  if (!client.is_valid()) {
    return Status::Config("sink '" + sink.name + "': its URL is not an http or https URL");
  }
  SetTimeouts(client, sink.timeout_s);
  const auto deadline = Clock::now() + std::chrono::duration<double>(sink.timeout_s);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = {{"Baton-Incident", key}, {"Content-Type", "application/json"}};
  req.body = body;
  int status = 0;
  size_t read = 0;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  // Past 64 KiB or the deadline the answer is dropped: its status line already said enough.
  req.content_receiver = [&](const char*, size_t n, uint64_t, uint64_t) {
    read += n;
    return read < kMaxAnswerBytes && Clock::now() < deadline;
  };
  httplib::Result res = client.send(req);
  if (status == 0) {
    return Status::Unavailable("sink '" + sink.name + "': no answer (" +
                               httplib::to_string(res.error()) + ")");
  }
  if (status < 200 || status > 299) {
    return Status::Unavailable("sink '" + sink.name + "': answered HTTP " + std::to_string(status));
  }
  return Status::Ok();
}

Status Sendmail(const AlertSink& sink, const std::string& mail) {
  int in[2];
  if (pipe(in) != 0) return Status::Unavailable("sink '" + sink.name + "': pipe failed");
  const pid_t pid = fork();
  if (pid < 0) {
    close(in[0]);
    close(in[1]);
    return Status::Unavailable("sink '" + sink.name + "': fork failed");
  }
  if (pid == 0) {
    dup2(in[0], 0);
    close(in[0]);
    close(in[1]);
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 1);
    setpgid(0, 0);
    execl(sink.sendmail.c_str(), sink.sendmail.c_str(), "-t", "-oi", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  signal(SIGPIPE, SIG_IGN);
  size_t off = 0;
  while (off < mail.size()) {
    const ssize_t n = write(in[1], mail.data() + off, mail.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(in[1]);
  const auto deadline = Clock::now() + std::chrono::duration<double>(sink.timeout_s);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &wstatus, 0);
      return Status::Unavailable("sink '" + sink.name + "': " + sink.sendmail +
                                 " did not finish within " + std::to_string(sink.timeout_s) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    return Status::Unavailable("sink '" + sink.name + "': " + sink.sendmail + " exited " +
                               std::to_string(code) + (code == 127 ? " (cannot be run)" : ""));
  }
  if (off < mail.size()) {
    return Status::Unavailable("sink '" + sink.name + "': " + sink.sendmail +
                               " did not read the message");
  }
  return Status::Ok();
}

}  // namespace

Status SendAlert(const AlertSink& sink, const nlohmann::json& message) {
  const std::string key = message.value("idempotency_key", "");
  if (sink.type == SinkType::kEmail) return Sendmail(sink, EmailMessage(message, sink.to));
  Result<std::string> url = ResolveReference(sink.url);
  if (!url.ok()) return Status::Config("sink '" + sink.name + "': " + url.status().message());
  const std::string body = sink.type == SinkType::kSlack ? SlackBody(message) : message.dump();
  return PostJson(sink, *url, key, body);
}

nlohmann::json SinkJson(const AlertSink& sink) {
  return nlohmann::json{{"name", sink.name},         {"type", SinkTypeName(sink.type)},
                        {"url", sink.url},           {"to", sink.to},
                        {"sendmail", sink.sendmail}, {"timeout_s", sink.timeout_s}};
}

Result<AlertSink> SinkFromJson(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    AlertSink s;
    s.name = j.at("name").get<std::string>();
    const std::string type = j.at("type").get<std::string>();
    s.type = type == "slack"   ? SinkType::kSlack
             : type == "email" ? SinkType::kEmail
                               : SinkType::kWebhook;
    s.url = j.value("url", "");
    s.to = j.value("to", "");
    s.sendmail = j.value("sendmail", s.sendmail);
    s.timeout_s = j.value("timeout_s", s.timeout_s);
    return s;
  } catch (const nlohmann::json::exception& e) {
    return Status::Data(std::string("an outbox row's sink is unreadable: ") + e.what());
  }
}

}  // namespace baton
