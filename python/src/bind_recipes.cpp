// Locks and leadership: Hold, DistributedMutex, DistributedReadWriteLock,
// DistributedSemaphore, LeaderLatch, LeaderSelector, LeaderObserver.
#include <condition_variable>
#include <memory>
#include <optional>
#include <string>

#include "etcd/recipes/election.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/rwlock.h"
#include "etcd/recipes/semaphore.h"
#include "recipe_binding.h"

namespace etcd::python {
namespace {

using namespace etcd::recipes;

std::string term_end_name(TermEnd e) { return std::string(to_string(e)); }

// A LeaderSelector for Python. With a callback, the C++ selector runs it (on
// its own thread, with the GIL) once per term. Without one, leadership is
// taken by the caller: the selector's callback publishes the term here and
// keeps it until the caller ends it (end_term) or it is lost — the
// `with selector.leadership() as term:` form.
class PySelector {
 public:
  struct Bridge {
    std::mutex mu;
    std::condition_variable_any cv;
    std::optional<LeaderTerm> term;
    SharedPy user_callback;
    SharedPy waker;  // asyncio: runs once when a term begins
  };

  PySelector(Client client, std::string name, std::string value, py::object callback, RecipeOptions options)
      : bridge_(std::make_shared<Bridge>()),
        selector_(std::move(client), std::move(name), std::move(value), make_callback(bridge_), std::move(options)) {
    if (!callback.is_none()) {
      bridge_->user_callback = SharedPy(std::move(callback));
    } else {
      selector_.set_auto_requeue(false);
    }
  }

  LeaderSelector& selector() { return selector_; }

  // Joins the queue: the first time start(), then requeue() (which does
  // nothing while queued or leading).
  void join() {
    py::gil_scoped_release nogil;
    if (!started_) {
      selector_.start();
      started_ = true;
    } else {
      (void)selector_.requeue();
    }
  }

  py::object poll_term() {
    std::lock_guard lock(bridge_->mu);
    if (!bridge_->term) return py::none();
    return py::cast(*bridge_->term);
  }

  bool arm(py::object waker) {
    std::lock_guard lock(bridge_->mu);
    if (bridge_->term) return false;
    bridge_->waker = SharedPy(std::move(waker));
    return true;
  }

  // Blocks until this candidate leads: its term, or None when the time ran
  // out (the candidate then leaves the queue).
  py::object wait_term(std::optional<double> timeout) {
    join();
    const auto deadline =
        timeout ? std::optional(Clock::now() + to_duration(*timeout, "timeout")) : std::optional<Deadline>();
    bool timed_out = false;
    wait_interruptibly(
        [&](std::chrono::milliseconds slice) {
          std::unique_lock lock(bridge_->mu);
          auto until = Clock::now() + slice;
          if (deadline && *deadline < until) until = *deadline;
          if (bridge_->cv.wait_until(lock, until, [&] { return bridge_->term.has_value(); })) return true;
          lock.unlock();
          // A term that ended just before this wait leaves the candidate out
          // of the queue until its callback returned: join again.
          (void)selector_.requeue();
          timed_out = deadline && Clock::now() >= *deadline;
          return timed_out;
        },
        [&] { selector_.resign(); });
    if (timed_out) {
      py::gil_scoped_release nogil;
      selector_.resign();
      return py::none();
    }
    return poll_term();
  }

  // Ends the current term (the leader key is deleted once the callback
  // returned) and waits, bounded, until it has.
  void end_term() {
    py::gil_scoped_release nogil;
    selector_.interrupt();
    std::unique_lock lock(bridge_->mu);
    bridge_->cv.wait_for(lock, std::chrono::seconds(5), [&] { return !bridge_->term.has_value(); });
  }

 private:
  static LeaderSelector::StopCallback make_callback(std::shared_ptr<Bridge> bridge) {
    return [bridge](std::stop_token stop, LeaderTerm& term) {
      if (bridge->user_callback) {
        if (!python_alive()) return;
        py::gil_scoped_acquire gil;
        try {
          bridge->user_callback.get()(term);
        } catch (py::error_already_set& e) {
          // Recorded by the selector (TermEnd::kThrew, errors()) as well.
          std::string what = e.what();
          e.discard_as_unraisable("etcd_recipes: LeaderSelector callback");
          throw std::runtime_error(what);
        }
        return;
      }
      SharedPy waker;
      std::unique_lock lock(bridge->mu);
      bridge->term.emplace(term);
      waker = std::exchange(bridge->waker, SharedPy());
      bridge->cv.notify_all();
      if (waker) {
        lock.unlock();
        call_python(waker, "etcd_recipes: waking an async leadership wait");
        lock.lock();
      }
      bridge->cv.wait(lock, stop, [] { return false; });
      bridge->term.reset();
      bridge->cv.notify_all();
    };
  }

  std::shared_ptr<Bridge> bridge_;
  LeaderSelector selector_;
  bool started_ = false;
};

}  // namespace

void bind_recipes(py::module_& m) {
  py::class_<Hold>(m, "Hold")
      .def_property_readonly("valid", &Hold::valid)
      .def("__bool__", &Hold::valid)
      .def_property_readonly("key", &Hold::key)
      .def_property_readonly("token", &Hold::token)
      .def_property_readonly("lease", &Hold::lease)
      .def_property_readonly("is_held", &Hold::is_held)
      .def_property_readonly("ended", [](const Hold& h) { return h.stop_token().stop_requested(); })
      .def(
          "on_lost",
          [](const Hold& h, py::object f) {
            return wrap(h.on_lost(listener<const Status&>(
                std::move(f), "etcd_recipes: Hold.on_lost listener",
                [](const py::object& cb, const Status& s) { cb(make_exception(s)); })));
          },
          py::arg("listener"))
      .def(
          "guarded", [](const Hold& h, const Txn& t) { return pending(h.guarded(t)); }, py::arg("txn"))
      .def("release", [](const Hold& h) { return pending(h.release()); })
      .def("__repr__", [](const Hold& h) {
        if (!h.valid()) return std::string("Hold(<empty>)");
        return "Hold(key=" + h.key() + ", token=" + std::to_string(h.token()) +
               ", held=" + (h.is_held() ? "True" : "False") + ")";
      });

  py::class_<LeaderTerm, Hold>(m, "LeaderTerm")
      .def_property_readonly("stop_requested", &LeaderTerm::stop_requested)
      .def_property_readonly("end",
                             [](const LeaderTerm& t) -> py::object {
                               auto e = t.end();
                               if (!e) return py::none();
                               return py::str(term_end_name(*e));
                             })
      .def(
          "proclaim", [](const LeaderTerm& t, std::string v) { return pending(t.proclaim(std::move(v))); },
          py::arg("value"));

  // --- DistributedMutex
  py::class_<DistributedMutex, std::shared_ptr<DistributedMutex>> mutex(m, "DistributedMutex");
  mutex.def(py::init([](Client client, std::string name, const RecipeOptions& options) {
              return make_releasing<DistributedMutex>(std::move(client), std::move(name), options);
            }),
            py::arg("client"), py::arg("name"), ETCD_PY_RECIPE_KWARGS);
  def_recipe(mutex);
  def_holder(mutex);
  def_lock(mutex);

  // --- DistributedReadWriteLock
  py::class_<DistributedReadWriteLock::LockView> view(m, "LockView");
  def_holder(view);
  def_lock(view);
  view.def_property_readonly("mode", [](const DistributedReadWriteLock::LockView& v) {
    return v.mode() == DistributedReadWriteLock::Mode::kRead ? "read" : "write";
  });
  py::class_<DistributedReadWriteLock, std::shared_ptr<DistributedReadWriteLock>> rw(m, "DistributedReadWriteLock");
  rw.def(py::init([](Client client, std::string name, const RecipeOptions& options) {
           return make_releasing<DistributedReadWriteLock>(std::move(client), std::move(name), options);
         }),
         py::arg("client"), py::arg("name"), ETCD_PY_RECIPE_KWARGS)
      .def_property_readonly(
          "read_lock", [](DistributedReadWriteLock& r) -> auto& { return r.read_lock(); },
          py::return_value_policy::reference_internal)
      .def_property_readonly(
          "write_lock", [](DistributedReadWriteLock& r) -> auto& { return r.write_lock(); },
          py::return_value_policy::reference_internal)
      .def("downgrade", [](DistributedReadWriteLock& r) { return pending(r.downgrade()); });
  def_recipe(rw);

  // --- DistributedSemaphore
  py::class_<DistributedSemaphore, std::shared_ptr<DistributedSemaphore>> sem(m, "DistributedSemaphore");
  sem.def(py::init([](Client client, std::string name, int permits, const RecipeOptions& options) {
            return make_releasing<DistributedSemaphore>(std::move(client), std::move(name), permits, options);
          }),
          py::arg("client"), py::arg("name"), py::arg("permits"), ETCD_PY_RECIPE_KWARGS)
      .def("acquire", [](DistributedSemaphore& s) { return pending(s.acquire()); })
      .def("try_acquire", [](DistributedSemaphore& s) { return pending(s.try_acquire()); })
      .def("available_permits", [](DistributedSemaphore& s) { return pending(s.available_permits()); })
      .def("resize", [](DistributedSemaphore& s, int permits) { return pending(s.resize(permits)); }, py::arg("permits"))
      .def_property_readonly("permits", &DistributedSemaphore::permits);
  def_recipe(sem);

  // --- elections
  py::class_<Participant>(m, "Participant")
      .def_readonly("key", &Participant::key)
      .def_property_readonly("value", [](const Participant& p) { return py::bytes(p.value); })
      .def_readonly("term", &Participant::term)
      .def_readonly("lease", &Participant::lease)
      .def_readonly("leader", &Participant::leader);
  py::class_<LeaderInfo>(m, "LeaderInfo")
      .def_readonly("key", &LeaderInfo::key)
      .def_property_readonly("value", [](const LeaderInfo& p) { return py::bytes(p.value); })
      .def_readonly("term", &LeaderInfo::term)
      .def_readonly("lease", &LeaderInfo::lease)
      .def("__eq__", [](const LeaderInfo& a, const LeaderInfo& b) { return a == b; });

  py::class_<LeaderLatch, std::shared_ptr<LeaderLatch>> latch(m, "LeaderLatch");
  latch
      .def(py::init([](Client client, std::string name, std::string value, const RecipeOptions& options) {
             return make_releasing<LeaderLatch>(std::move(client), std::move(name), std::move(value), options);
           }),
           py::arg("client"), py::arg("name"), py::arg("value") = "", ETCD_PY_RECIPE_KWARGS)
      .def("await_leadership", [](LeaderLatch& l) { return pending(l.await_leadership()); })
      .def(
          "proclaim", [](LeaderLatch& l, std::string v) { return pending(l.proclaim(std::move(v))); },
          py::arg("value"))
      .def("resign", [](LeaderLatch& l) { return pending(l.resign()); })
      .def("participants", [](LeaderLatch& l) { return pending(l.participants()); })
      .def("leader", [](LeaderLatch& l) { return pending(l.leader()); })
      .def(
          "on_is_leader",
          [](LeaderLatch& l, py::object f) {
            return wrap(l.on_is_leader(listener<int64_t>(std::move(f), "etcd_recipes: on_is_leader listener",
                                                         [](const py::object& cb, int64_t t) { cb(t); })));
          },
          py::arg("listener"))
      .def(
          "on_not_leader",
          [](LeaderLatch& l, py::object f) {
            return wrap(l.on_not_leader(listener<const Status&>(
                std::move(f), "etcd_recipes: on_not_leader listener",
                [](const py::object& cb, const Status& s) { cb(status_or_none(s)); })));
          },
          py::arg("listener"));
  def_recipe(latch);
  def_holder(latch);

  py::class_<PySelector, std::shared_ptr<PySelector>>(m, "LeaderSelector")
      .def(py::init([](Client client, std::string name, std::string value, py::object callback,
                       const RecipeOptions& options) {
             return make_releasing<PySelector>(std::move(client), std::move(name), std::move(value),
                                               std::move(callback), options);
           }),
           py::arg("client"), py::arg("name"), py::arg("value") = "", py::arg("callback") = py::none(),
           ETCD_PY_RECIPE_KWARGS)
      .def("join", &PySelector::join)
      .def("poll_term", &PySelector::poll_term)
      .def("arm", &PySelector::arm, py::arg("waker"))
      .def("wait_term", &PySelector::wait_term, py::arg("timeout") = py::none())
      .def("end_term", &PySelector::end_term)
      .def_property_readonly("name", [](PySelector& s) { return s.selector().name(); })
      .def_property_readonly("identity", [](PySelector& s) { return s.selector().identity(); })
      .def(
          "start", [](PySelector& s) { s.join(); })
      .def(
          "close", [](PySelector& s) { s.selector().close(); }, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("closed", [](PySelector& s) { return s.selector().closed(); })
      .def_property_readonly("state", [](PySelector& s) { return std::string(to_string(s.selector().state())); })
      .def("errors",
           [](PySelector& s) {
             py::list out;
             for (const Status& st : s.selector().errors()) out.append(make_exception(st));
             return out;
           })
      .def(
          "set_auto_requeue", [](PySelector& s, bool on) { s.selector().set_auto_requeue(on); }, py::arg("on"))
      .def(
          "requeue", [](PySelector& s) { return s.selector().requeue(); }, py::call_guard<py::gil_scoped_release>())
      .def(
          "interrupt", [](PySelector& s) { s.selector().interrupt(); }, py::call_guard<py::gil_scoped_release>())
      .def(
          "resign", [](PySelector& s) { s.selector().resign(); }, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("terms", [](PySelector& s) { return s.selector().terms(); })
      .def_property_readonly("is_held", [](PySelector& s) { return s.selector().is_held(); })
      .def(
          "on_term_end",
          [](PySelector& s, py::object f) {
            return wrap(s.selector().on_term_end(listener<TermEnd, const Status&>(
                std::move(f), "etcd_recipes: on_term_end listener",
                [](const py::object& cb, TermEnd e, const Status& st) { cb(term_end_name(e), status_or_none(st)); })));
          },
          py::arg("listener"))
      .def("participants", [](PySelector& s) { return pending(s.selector().participants()); })
      .def("leader", [](PySelector& s) { return pending(s.selector().leader()); });

  py::class_<LeaderObserver, std::shared_ptr<LeaderObserver>> observer(m, "LeaderObserver");
  observer
      .def(py::init([](Client client, std::string name, const RecipeOptions& options) {
             return make_releasing<LeaderObserver>(std::move(client), std::move(name), options);
           }),
           py::arg("client"), py::arg("name"), ETCD_PY_RECIPE_KWARGS)
      .def("wait_initialized", [](LeaderObserver& o) { return pending(o.wait_initialized()); })
      .def_property_readonly("initialized", &LeaderObserver::initialized)
      .def_property_readonly("current", &LeaderObserver::current)
      .def(
          "on_change",
          [](LeaderObserver& o, py::object f) {
            return wrap(o.on_change(listener<const std::optional<LeaderInfo>&>(
                std::move(f), "etcd_recipes: LeaderObserver.on_change listener",
                [](const py::object& cb, const std::optional<LeaderInfo>& l) { cb(l); })));
          },
          py::arg("listener"))
      .def("participants", [](LeaderObserver& o) { return pending(o.participants()); })
      .def("leader", [](LeaderObserver& o) { return pending(o.leader()); });
  def_recipe(observer);
}

}  // namespace etcd::python
