// The client: responses, the Txn builder, leases, sessions, watches and the
// Client itself. Keys and values go in as str or bytes and come out as bytes.
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common.h"
#include "etcd/lease.h"
#include "etcd/session.h"
#include "etcd/txn.h"
#include "etcd/watch.h"

namespace etcd::python {

void discard(recipes::Hold& hold) {
  // Fire and forget: the hold was granted to nobody.
  std::move(hold.release()).then([](Result<bool>) {});
}

namespace {

py::list op_responses(const TxnResponse& r) {
  py::list out;
  for (const OpResponse& op : r.responses) {
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::shared_ptr<TxnResponse>>) {
            out.append(py::cast(*v));
          } else {
            out.append(py::cast(v));
          }
        },
        op.response);
  }
  return out;
}

// What a watch delivered and the consumer has not taken yet. The handler
// runs on the client's executor and only touches C++ state, except the
// asyncio waker, which it calls with the GIL.
class PyWatch {
 public:
  struct Channel {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Result<WatchResponse>> queue;
    bool ended = false;  // cancelled, or the error (the last response) was taken
    SharedPy waker;
  };

  PyWatch(Client& client, std::string key, WatchOptions options) : chan_(std::make_shared<Channel>()) {
    auto chan = chan_;
    watcher_ = client.watch(std::move(key), std::move(options), [chan](Result<WatchResponse> r) {
      SharedPy waker;
      {
        std::lock_guard lock(chan->mu);
        chan->queue.push_back(std::move(r));
        waker = std::exchange(chan->waker, SharedPy());
        chan->cv.notify_all();
      }
      if (waker) call_python(waker, "etcd_recipes: waking an async watch");
    });
  }

  // The next response; None when `timeout` ran out; StopIteration once
  // cancelled; the mapped exception for the watch's final error.
  py::object next(std::optional<double> timeout) {
    const auto deadline =
        timeout ? std::optional(Clock::now() + to_duration(*timeout, "timeout")) : std::optional<Deadline>();
    bool timed_out = false;
    wait_interruptibly(
        [&](std::chrono::milliseconds slice) {
          std::unique_lock lock(chan_->mu);
          auto until = Clock::now() + slice;
          if (deadline && *deadline < until) until = *deadline;
          if (chan_->cv.wait_until(lock, until, [&] { return !chan_->queue.empty() || chan_->ended; })) return true;
          timed_out = deadline && Clock::now() >= *deadline;
          return timed_out;
        },
        [] {});
    if (timed_out) return py::none();
    return take();
  }
  // The next response if there is one now, else None.
  py::object poll() { return take(); }
  // Registers `waker` to run once the next response arrives; false (and no
  // registration) if one is already there.
  bool arm(py::object waker) {
    std::lock_guard lock(chan_->mu);
    if (!chan_->queue.empty() || chan_->ended) return false;
    chan_->waker = SharedPy(std::move(waker));
    return true;
  }
  void cancel() {
    SharedPy waker;
    {
      py::gil_scoped_release nogil;
      watcher_.cancel();
      std::lock_guard lock(chan_->mu);
      chan_->ended = true;
      chan_->queue.clear();
      waker = std::exchange(chan_->waker, SharedPy());
      chan_->cv.notify_all();
    }
    if (waker) waker.get()();
  }
  bool active() const { return watcher_.active(); }
  int64_t delivered_revision() const { return watcher_.delivered_revision(); }
  bool wait_created(double timeout) {
    py::gil_scoped_release nogil;
    return watcher_.wait_created(Clock::now() + to_duration(timeout, "timeout"));
  }

 private:
  py::object take() {
    std::optional<Result<WatchResponse>> r;
    {
      std::lock_guard lock(chan_->mu);
      if (chan_->queue.empty()) {
        if (chan_->ended) throw py::stop_iteration();
        return py::none();
      }
      r.emplace(std::move(chan_->queue.front()));
      chan_->queue.pop_front();
      if (!r->ok()) chan_->ended = true;
    }
    if (!r->ok()) throw_status(r->status());
    return py::cast(std::move(*r).value());
  }

  std::shared_ptr<Channel> chan_;
  Watcher watcher_;
};

ClientOptions client_options(std::vector<std::string> endpoints, std::optional<double> timeout, std::string ns,
                             std::optional<std::string> user, std::optional<std::string> password,
                             std::optional<std::string> ca_file, std::optional<std::string> cert_file,
                             std::optional<std::string> key_file, std::optional<std::string> server_name, bool tls,
                             int callback_threads) {
  ClientOptions o;
  o.endpoints = std::move(endpoints);
  if (timeout) o.default_timeout = to_duration(*timeout, "timeout");
  o.namespace_prefix = std::move(ns);
  if (user) o.user = *user;
  if (password) o.password = *password;
  if (tls || ca_file || cert_file || key_file || server_name) {
    TlsOptions t;
    if (ca_file) t.ca_file = *ca_file;
    if (cert_file) t.cert_file = *cert_file;
    if (key_file) t.key_file = *key_file;
    if (server_name) t.server_name = *server_name;
    o.tls = t;
  }
  o.callback_threads = callback_threads;
  return o;
}

// The options refer to `range_end` (KeyView): the caller keeps it alive
// until the call or Op it is passed to has copied it.
GetOptions get_options(bool prefix, const std::string& range_end, int64_t limit, int64_t revision, bool keys_only,
                       bool count_only, bool serializable, int sort_order, int sort_target) {
  GetOptions o;
  o.prefix = prefix;
  o.range_end = range_end;
  o.limit = limit;
  o.revision = revision;
  o.keys_only = keys_only;
  o.count_only = count_only;
  o.serializable = serializable;
  o.sort_order = static_cast<SortOrder>(sort_order);
  o.sort_target = static_cast<SortTarget>(sort_target);
  return o;
}

DeleteOptions delete_options(bool prefix, const std::string& range_end, bool prev_kv) {
  DeleteOptions o;
  o.prefix = prefix;
  o.range_end = range_end;
  o.prev_kv = prev_kv;
  return o;
}

PutOptions put_options(int64_t lease, bool prev_kv, bool ignore_value, bool ignore_lease) {
  PutOptions o;
  o.lease = lease;
  o.prev_kv = prev_kv;
  o.ignore_value = ignore_value;
  o.ignore_lease = ignore_lease;
  return o;
}

template <class F>
PySubscription* subscribe(F&& register_listener) {
  auto* s = new PySubscription();
  s->sub = register_listener();
  return s;
}

}  // namespace

void bind_client(py::module_& m) {
  py::class_<PendingCall, std::shared_ptr<PendingCall>>(m, "PendingCall")
      .def("wait", &PendingCall::wait, py::arg("timeout") = py::none())
      .def("wait_or_none", &PendingCall::wait_or_none, py::arg("timeout") = py::none())
      .def("start", &PendingCall::start, py::arg("resolve"), py::arg("timeout") = py::none());

  py::class_<PySubscription, std::unique_ptr<PySubscription, ReleasingDeleter<PySubscription>>>(m, "Subscription")
      .def("cancel", &PySubscription::cancel)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PySubscription& s, py::args) { s.cancel(); });

  py::class_<ResponseHeader>(m, "ResponseHeader")
      .def_readonly("cluster_id", &ResponseHeader::cluster_id)
      .def_readonly("member_id", &ResponseHeader::member_id)
      .def_readonly("revision", &ResponseHeader::revision)
      .def_readonly("raft_term", &ResponseHeader::raft_term);

  py::class_<KeyValue>(m, "KeyValue")
      .def_property_readonly("key", [](const KeyValue& kv) { return py::bytes(kv.key); })
      .def_property_readonly("value", [](const KeyValue& kv) { return py::bytes(kv.value); })
      .def_readonly("create_revision", &KeyValue::create_revision)
      .def_readonly("mod_revision", &KeyValue::mod_revision)
      .def_readonly("version", &KeyValue::version)
      .def_readonly("lease", &KeyValue::lease)
      .def("__repr__", [](const KeyValue& kv) {
        return "KeyValue(key=" + py::repr(py::bytes(kv.key)).cast<std::string>() +
               ", value=" + py::repr(py::bytes(kv.value)).cast<std::string>() +
               ", mod_revision=" + std::to_string(kv.mod_revision) + ")";
      });

  py::class_<GetResponse>(m, "GetResponse")
      .def_readonly("header", &GetResponse::header)
      .def_readonly("kvs", &GetResponse::kvs)
      .def_readonly("more", &GetResponse::more)
      .def_readonly("count", &GetResponse::count)
      .def_property_readonly("value", [](const GetResponse& r) -> py::object {
        if (r.kvs.empty()) return py::none();
        return py::bytes(r.kvs.front().value);
      });
  py::class_<PutResponse>(m, "PutResponse")
      .def_readonly("header", &PutResponse::header)
      .def_readonly("prev_kv", &PutResponse::prev_kv);
  py::class_<DeleteResponse>(m, "DeleteResponse")
      .def_readonly("header", &DeleteResponse::header)
      .def_readonly("deleted", &DeleteResponse::deleted)
      .def_readonly("prev_kvs", &DeleteResponse::prev_kvs);
  py::class_<TxnResponse>(m, "TxnResponse")
      .def_readonly("header", &TxnResponse::header)
      .def_readonly("succeeded", &TxnResponse::succeeded)
      .def_property_readonly("responses", &op_responses);
  py::class_<CompactResponse>(m, "CompactResponse").def_readonly("header", &CompactResponse::header);
  py::class_<LeaseGrantResponse>(m, "LeaseGrantResponse")
      .def_readonly("header", &LeaseGrantResponse::header)
      .def_readonly("id", &LeaseGrantResponse::id)
      .def_readonly("ttl", &LeaseGrantResponse::ttl);
  py::class_<LeaseRevokeResponse>(m, "LeaseRevokeResponse").def_readonly("header", &LeaseRevokeResponse::header);
  py::class_<LeaseKeepAliveResponse>(m, "LeaseKeepAliveResponse")
      .def_readonly("header", &LeaseKeepAliveResponse::header)
      .def_readonly("id", &LeaseKeepAliveResponse::id)
      .def_readonly("ttl", &LeaseKeepAliveResponse::ttl);
  py::class_<LeaseTimeToLiveResponse>(m, "LeaseTimeToLiveResponse")
      .def_readonly("header", &LeaseTimeToLiveResponse::header)
      .def_readonly("id", &LeaseTimeToLiveResponse::id)
      .def_readonly("ttl", &LeaseTimeToLiveResponse::ttl)
      .def_readonly("granted_ttl", &LeaseTimeToLiveResponse::granted_ttl)
      .def_property_readonly("keys", [](const LeaseTimeToLiveResponse& r) {
        py::list out;
        for (const auto& k : r.keys) out.append(py::bytes(k));
        return out;
      });
  py::class_<LeaseLeasesResponse>(m, "LeaseLeasesResponse")
      .def_readonly("header", &LeaseLeasesResponse::header)
      .def_readonly("leases", &LeaseLeasesResponse::leases);
  py::class_<Member>(m, "Member")
      .def_readonly("id", &Member::id)
      .def_readonly("name", &Member::name)
      .def_readonly("peer_urls", &Member::peer_urls)
      .def_readonly("client_urls", &Member::client_urls)
      .def_readonly("is_learner", &Member::is_learner);
  py::class_<MemberListResponse>(m, "MemberListResponse")
      .def_readonly("header", &MemberListResponse::header)
      .def_readonly("members", &MemberListResponse::members);
  py::class_<StatusResponse>(m, "StatusResponse")
      .def_readonly("header", &StatusResponse::header)
      .def_readonly("version", &StatusResponse::version)
      .def_readonly("db_size", &StatusResponse::db_size)
      .def_readonly("leader", &StatusResponse::leader)
      .def_readonly("raft_index", &StatusResponse::raft_index)
      .def_readonly("raft_term", &StatusResponse::raft_term)
      .def_readonly("is_learner", &StatusResponse::is_learner);

  py::class_<Event>(m, "Event")
      .def_property_readonly("type", [](const Event& e) { return e.type == Event::Type::kPut ? "PUT" : "DELETE"; })
      .def_readonly("kv", &Event::kv)
      .def_readonly("prev_kv", &Event::prev_kv)
      .def("__repr__", [](const Event& e) {
        return std::string("Event(") + (e.type == Event::Type::kPut ? "PUT" : "DELETE") +
               ", key=" + py::repr(py::bytes(e.kv.key)).cast<std::string>() + ")";
      });
  py::class_<WatchResponse>(m, "WatchResponse")
      .def_readonly("header", &WatchResponse::header)
      .def_readonly("events", &WatchResponse::events)
      .def_readonly("progress", &WatchResponse::progress)
      .def_readonly("created", &WatchResponse::created);

  // --- Txn builder
  using IntOperand = Compare::Operand<int64_t>;
  using ValueOperand = Compare::Operand<std::string>;
  py::class_<IntOperand>(m, "CompareOperand")
      .def("__eq__", [](const IntOperand& o, int64_t v) { return o == v; })
      .def("__ne__", [](const IntOperand& o, int64_t v) { return o != v; })
      .def("__lt__", [](const IntOperand& o, int64_t v) { return o < v; })
      .def("__gt__", [](const IntOperand& o, int64_t v) { return o > v; })
      .def("with_prefix", &IntOperand::with_prefix);
  py::class_<ValueOperand>(m, "CompareValueOperand")
      .def("__eq__", [](const ValueOperand& o, std::string v) { return o == std::move(v); })
      .def("__ne__", [](const ValueOperand& o, std::string v) { return o != std::move(v); })
      .def("__lt__", [](const ValueOperand& o, std::string v) { return o < std::move(v); })
      .def("__gt__", [](const ValueOperand& o, std::string v) { return o > std::move(v); })
      .def("with_prefix", &ValueOperand::with_prefix);
  py::class_<Compare>(m, "Compare")
      .def_static("version", &Compare::version, py::arg("key"))
      .def_static("create_revision", &Compare::create_revision, py::arg("key"))
      .def_static("mod_revision", &Compare::mod_revision, py::arg("key"))
      .def_static("value", &Compare::value, py::arg("key"))
      .def_static("lease", &Compare::lease, py::arg("key"))
      .def_static("exists", &Compare::exists, py::arg("key"))
      .def_static("absent", &Compare::absent, py::arg("key"))
      .def_property_readonly("key", [](const Compare& c) { return py::bytes(c.key); });
  py::class_<Op>(m, "Op")
      .def_static(
          "get",
          [](std::string key, bool prefix, std::string range_end, int64_t limit, int64_t revision, bool keys_only,
             bool count_only) {
            return Op::get(std::move(key),
                           get_options(prefix, range_end, limit, revision, keys_only, count_only, false, 0, 0));
          },
          py::arg("key"), py::kw_only(), py::arg("prefix") = false, py::arg("range_end") = "", py::arg("limit") = 0,
          py::arg("revision") = 0, py::arg("keys_only") = false, py::arg("count_only") = false)
      .def_static(
          "put",
          [](std::string key, std::string value, int64_t lease, bool prev_kv) {
            return Op::put(std::move(key), std::move(value), put_options(lease, prev_kv, false, false));
          },
          py::arg("key"), py::arg("value"), py::kw_only(), py::arg("lease") = 0, py::arg("prev_kv") = false)
      .def_static(
          "delete",
          [](std::string key, bool prefix, std::string range_end, bool prev_kv) {
            return Op::del(std::move(key), delete_options(prefix, range_end, prev_kv));
          },
          py::arg("key"), py::kw_only(), py::arg("prefix") = false, py::arg("range_end") = "",
          py::arg("prev_kv") = false)
      .def_static("txn", &Op::txn, py::arg("txn"));
  py::class_<Txn>(m, "Txn")
      .def(py::init<>())
      .def("when",
           [](py::object self, py::args compares) {
             Txn& t = self.cast<Txn&>();
             for (auto c : compares) t.when(c.cast<Compare>());
             return self;
           })
      .def("then",
           [](py::object self, py::args ops) {
             Txn& t = self.cast<Txn&>();
             for (auto o : ops) t.then(o.cast<Op>());
             return self;
           })
      .def("otherwise", [](py::object self, py::args ops) {
        Txn& t = self.cast<Txn&>();
        for (auto o : ops) t.otherwise(o.cast<Op>());
        return self;
      });

  // --- Lease (kept alive while the object lives)
  py::class_<Lease, std::unique_ptr<Lease, ReleasingDeleter<Lease>>>(m, "Lease")
      .def_property_readonly("id", &Lease::id)
      .def_property_readonly("ttl", [](const Lease& l) { return l.ttl().count(); })
      .def_property_readonly("alive", &Lease::alive)
      .def(
          "on_lost",
          [](Lease& l, py::object f) {
            SharedPy cb(std::move(f));
            return subscribe([&] {
              return l.on_lost([cb](const Status& why) {
                if (!python_alive()) return;
                py::gil_scoped_acquire gil;
                try {
                  cb.get()(make_exception(why));
                } catch (py::error_already_set& e) {
                  e.discard_as_unraisable("etcd_recipes: Lease.on_lost listener");
                }
              });
            });
          },
          py::arg("listener"))
      .def("revoke", [](Lease& l) { return pending(l.revoke()); })
      .def("detach", &Lease::detach, py::call_guard<py::gil_scoped_release>());

  // --- Session (a shared lease for recipes' exclusive holds)
  py::class_<Session, std::shared_ptr<Session>>(m, "Session")
      .def(py::init([](Client& client, double ttl) {
             SessionOptions o;
             o.ttl = std::chrono::duration_cast<std::chrono::seconds>(to_duration(ttl, "ttl"));
             return Session::create(client, o);
           }),
           py::arg("client"), py::kw_only(), py::arg("ttl") = 10.0)
      .def("start", [](Session& s) { return pending(s.start()); })
      .def("close", [](Session& s) { return pending(s.close()); })
      .def_property_readonly("lease_id", &Session::lease_id)
      .def_property_readonly("ttl", [](const Session& s) { return s.ttl().count(); })
      .def_property_readonly("alive", &Session::alive);

  py::class_<PyWatch, std::unique_ptr<PyWatch, ReleasingDeleter<PyWatch>>>(m, "Watch")
      .def("next", &PyWatch::next, py::arg("timeout") = py::none())
      .def("poll", &PyWatch::poll)
      .def("arm", &PyWatch::arm, py::arg("waker"))
      .def("cancel", &PyWatch::cancel)
      .def_property_readonly("active", &PyWatch::active)
      .def_property_readonly("delivered_revision", &PyWatch::delivered_revision)
      .def("wait_created", &PyWatch::wait_created, py::arg("timeout"));

  // --- Client
  py::class_<Client, std::shared_ptr<Client>>(m, "Client")
      .def(py::init([](std::vector<std::string> endpoints, std::optional<double> timeout, std::string ns,
                       std::optional<std::string> user, std::optional<std::string> password,
                       std::optional<std::string> ca_file, std::optional<std::string> cert_file,
                       std::optional<std::string> key_file, std::optional<std::string> server_name, bool tls,
                       int callback_threads) {
             return make_releasing<Client>(client_options(std::move(endpoints), timeout, std::move(ns),
                                                          std::move(user), std::move(password), std::move(ca_file),
                                                          std::move(cert_file), std::move(key_file),
                                                          std::move(server_name), tls, callback_threads));
           }),
           py::arg("endpoints"), py::kw_only(), py::arg("timeout") = py::none(), py::arg("namespace") = "",
           py::arg("user") = py::none(), py::arg("password") = py::none(), py::arg("ca_file") = py::none(),
           py::arg("cert_file") = py::none(), py::arg("key_file") = py::none(), py::arg("server_name") = py::none(),
           py::arg("tls") = false, py::arg("callback_threads") = 2)
      .def(
          "get",
          [](Client& c, std::string key, bool prefix, std::string range_end, int64_t limit, int64_t revision,
             bool keys_only, bool count_only, bool serializable, int sort_order, int sort_target) {
            return pending(c.get(std::move(key), get_options(prefix, range_end, limit, revision, keys_only,
                                                             count_only, serializable, sort_order, sort_target)));
          },
          py::arg("key"), py::kw_only(), py::arg("prefix") = false, py::arg("range_end") = "", py::arg("limit") = 0,
          py::arg("revision") = 0, py::arg("keys_only") = false, py::arg("count_only") = false,
          py::arg("serializable") = false, py::arg("sort_order") = 0, py::arg("sort_target") = 0)
      .def(
          "put",
          [](Client& c, std::string key, std::string value, int64_t lease, bool prev_kv, bool ignore_value,
             bool ignore_lease) {
            return pending(
                c.put(std::move(key), std::move(value), put_options(lease, prev_kv, ignore_value, ignore_lease)));
          },
          py::arg("key"), py::arg("value"), py::kw_only(), py::arg("lease") = 0, py::arg("prev_kv") = false,
          py::arg("ignore_value") = false, py::arg("ignore_lease") = false)
      .def(
          "delete",
          [](Client& c, std::string key, bool prefix, std::string range_end, bool prev_kv) {
            return pending(c.del(std::move(key), delete_options(prefix, range_end, prev_kv)));
          },
          py::arg("key"), py::kw_only(), py::arg("prefix") = false, py::arg("range_end") = "",
          py::arg("prev_kv") = false)
      .def(
          "txn", [](Client& c, const Txn& t) { return pending(c.txn(t)); }, py::arg("txn"))
      .def(
          "compact", [](Client& c, int64_t rev, bool physical) { return pending(c.compact(rev, physical)); },
          py::arg("revision"), py::kw_only(), py::arg("physical") = false)
      .def(
          "lease_grant",
          [](Client& c, double ttl, int64_t id) {
            return pending(c.lease_grant(std::chrono::duration_cast<std::chrono::seconds>(to_duration(ttl, "ttl")), id));
          },
          py::arg("ttl"), py::kw_only(), py::arg("id") = 0)
      .def(
          "lease_revoke", [](Client& c, int64_t id) { return pending(c.lease_revoke(id)); }, py::arg("id"))
      .def(
          "lease_time_to_live",
          [](Client& c, int64_t id, bool keys) { return pending(c.lease_time_to_live(id, keys)); }, py::arg("id"),
          py::kw_only(), py::arg("keys") = false)
      .def("lease_leases", [](Client& c) { return pending(c.lease_leases()); })
      .def(
          "lease_keep_alive_once", [](Client& c, int64_t id) { return pending(c.lease_keep_alive_once(id)); },
          py::arg("id"))
      .def(
          "lease",
          [](Client& c, double ttl) {
            return pending(c.lease(std::chrono::duration_cast<std::chrono::seconds>(to_duration(ttl, "ttl"))),
                           [](Lease&& l) {
                             return py::cast(std::unique_ptr<Lease, ReleasingDeleter<Lease>>(new Lease(std::move(l))));
                           });
          },
          py::arg("ttl"))
      .def(
          "watch",
          [](Client& c, std::string key, bool prefix, std::string range_end, int64_t start_revision, bool prev_kv,
             bool progress_notify, bool filter_puts, bool filter_deletes, bool notify_created) {
            WatchOptions o;
            o.prefix = prefix;
            o.range_end = std::move(range_end);
            o.start_revision = start_revision;
            o.prev_kv = prev_kv;
            o.progress_notify = progress_notify;
            o.filter_puts = filter_puts;
            o.filter_deletes = filter_deletes;
            o.notify_created = notify_created;
            return std::unique_ptr<PyWatch, ReleasingDeleter<PyWatch>>(new PyWatch(c, std::move(key), std::move(o)));
          },
          py::arg("key"), py::kw_only(), py::arg("prefix") = false, py::arg("range_end") = "",
          py::arg("start_revision") = 0, py::arg("prev_kv") = false, py::arg("progress_notify") = false,
          py::arg("filter_puts") = false, py::arg("filter_deletes") = false, py::arg("notify_created") = false)
      .def("member_list", [](Client& c) { return pending(c.member_list()); })
      .def(
          "status", [](Client& c, std::string endpoint) { return pending(c.status(std::move(endpoint))); },
          py::arg("endpoint") = "")
      .def("ping", [](Client& c) { return pending(c.ping()); })
      .def_property_readonly("state", [](const Client& c) { return std::string(to_string(c.state())); })
      .def("on_state_change",
           [](Client& c, py::object f) {
             SharedPy cb(std::move(f));
             return subscribe([&] {
               return c.on_state_change([cb](ConnectionState s) {
                 call_python(cb, "etcd_recipes: Client.on_state_change listener", std::string(to_string(s)));
               });
             });
           })
      .def_property_readonly("healthy", &Client::is_healthy)
      .def_property_readonly("current_endpoint", &Client::current_endpoint)
      .def_property_readonly("endpoints", [](const Client& c) { return c.options().endpoints; })
      .def_property_readonly("namespace", [](const Client& c) { return c.options().namespace_prefix; })
      .def("stats",
           [](const Client& c) {
             ClientStats s = c.stats();
             py::dict d;
             d["rpcs_started"] = s.rpcs_started;
             d["rpcs_failed"] = s.rpcs_failed;
             d["retries"] = s.retries;
             d["failovers"] = s.failovers;
             d["watch_stream_restarts"] = s.watch_stream_restarts;
             d["watches_open"] = s.watches_open;
             d["leases_kept"] = s.leases_kept;
             d["lease_streams"] = s.lease_streams;
             d["lease_stream_restarts"] = s.lease_stream_restarts;
             return d;
           })
      .def("close", &Client::close, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("closed", &Client::closed);
}

}  // namespace etcd::python
