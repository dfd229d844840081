// The Kotlin peer of etcd-recipes-bench: the bench's workloads run with
// com.pambrose:etcd-recipes-core (Kotlin on jetcd), the library etcd-recipes is
// modelled on, against an etcd the bench names. One JSON object on stdout,
// {"kt_<metric>": value, ...} (rates in ops/s, latencies in ms), plus
// "_errors" (metric -> message) and "_notes" (strings); diagnostics on stderr.
// Exit 0 when every selected metric ran, 1 when one failed, 2 on bad usage or
// the global deadline.
//
// Each workload uses the recipe as the library documents it: the blocking
// entry points for one-at-a-time cycles (the library's primary, Java-parity
// surface; its suspending twins run the same blocking call on Dispatchers.IO),
// and coroutines with the suspending twins where a Kotlin user would run many
// at once (concurrent adders, work-queue consumers, barrier parties, 1,000
// parked lock waiters).
package etcdrecipes.peer

import io.etcd.jetcd.ByteSequence
import io.etcd.jetcd.Client
import io.etcd.jetcd.options.DeleteOption
import io.etcd.jetcd.options.GetOption
import io.etcd.recipes.barrier.DistributedBarrierWithCount
import io.etcd.recipes.cache.PathChildrenCache
import io.etcd.recipes.cache.PathChildrenCacheEvent
import io.etcd.recipes.common.connectToEtcd
import io.etcd.recipes.coroutines.await
import io.etcd.recipes.coroutines.awaitAck
import io.etcd.recipes.coroutines.awaitAdd
import io.etcd.recipes.coroutines.awaitEnqueue
import io.etcd.recipes.coroutines.awaitReceive
import io.etcd.recipes.coroutines.withLock
import io.etcd.recipes.counter.DistributedAtomicLong
import io.etcd.recipes.discovery.RoundRobinStrategy
import io.etcd.recipes.discovery.ServiceDiscovery
import io.etcd.recipes.discovery.ServiceInstance
import io.etcd.recipes.election.LeaderLatch
import io.etcd.recipes.election.LeaderSelector
import io.etcd.recipes.lock.DistributedMutex
import io.etcd.recipes.lock.DistributedReadWriteLock
import io.etcd.recipes.lock.DistributedSemaphore
import io.etcd.recipes.queue.DistributedPriorityQueue
import io.etcd.recipes.queue.DistributedQueue
import io.etcd.recipes.queue.DistributedWorkQueue
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.isActive
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import java.io.File
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicLong
import kotlin.math.ceil
import kotlin.system.exitProcess
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlin.time.TimeSource

// Must match the C++ bench (bench.h) so that both send the same requests.
const val VALUE_SIZE = 32
val VALUE = "v".repeat(VALUE_SIZE)
val RPC_TIMEOUT = 10.seconds // bound on any single recipe call

class Settings(
  val endpoints: List<String>,
  val prefix: String,
  val quick: Boolean,
  val only: Set<String>,
  val duration: Duration,
  val warmup: Duration,
  val waiters: Int,
  val jvmWarmup: Duration,
)

fun log(msg: String) = System.err.println("kotlin-peer: $msg")

fun fail(msg: String): Nothing = throw IllegalStateException(msg)

fun bytes(s: String): ByteSequence = ByteSequence.from(s, Charsets.UTF_8)

class Peer(val s: Settings, val client: Client) {
  val out = linkedMapOf<String, Double>()
  val errors = linkedMapOf<String, String>()
  val notes = mutableListOf<String>()

  fun key(metric: String) = "${s.prefix}/$metric"

  fun wanted(vararg names: String) = s.only.isEmpty() || names.any { it in s.only }

  // Runs one workload; a failure is recorded against every metric it reports.
  fun run(
    vararg names: String,
    body: () -> Map<String, Double>,
  ) {
    if (!wanted(*names)) return
    val start = TimeSource.Monotonic.markNow()
    try {
      val got = body()
      for (n in names) out[n] = got[n] ?: fail("$n not reported")
      log("${names.joinToString(",")}: ${names.joinToString(" ") { "%.2f".format(out[it]) }} (took ${start.elapsedNow()})")
    } catch (e: Throwable) {
      val msg = "${e.javaClass.simpleName}: ${e.message}"
      log("${names.joinToString(",")} failed: $msg")
      e.printStackTrace()
      for (n in names) errors[n] = msg
    } finally {
      cleanup("") // the whole run's prefix: every workload starts on an empty one
    }
  }

  fun cleanup(metric: String) {
    runCatching {
      client.kvClient
        .delete(bytes(key(metric)), DeleteOption.builder().isPrefix(true).build())
        .get(30, TimeUnit.SECONDS)
    }.onFailure { log("clean-up of ${key(metric)} failed: $it") }
  }

  // The bench's measurement: an untimed warm-up, then completions per second
  // of the timed window.
  // The warm-up is at least --jvm-warmup-ms (2 s): a JVM runs its code
  // interpreted until the JIT has compiled it, and a service measured in its
  // steady state is JIT-warm (with the bench's 0.4 s quick warm-up the put
  // rate comes out at about half).
  fun sequential(op: () -> Unit): Double {
    val warm = TimeSource.Monotonic.markNow() + maxOf(s.warmup, s.jvmWarmup)
    while (warm.hasNotPassedNow()) op()
    var n = 0
    val start = TimeSource.Monotonic.markNow()
    val end = start + s.duration
    while (end.hasNotPassedNow()) {
      op()
      n++
    }
    return n / start.elapsedNow().toDouble(kotlin.time.DurationUnit.SECONDS)
  }

  fun putSeq(): Map<String, Double> {
    val k = bytes(key("put_seq") + "/put")
    val v = bytes(VALUE)
    return mapOf("kt_put_seq" to sequential { client.kvClient.put(k, v).get(RPC_TIMEOUT.inWholeMilliseconds, TimeUnit.MILLISECONDS) })
  }

  // DistributedMutex: etcd's Lock RPC under a lease of each acquisition's own.
  fun lockCycle(): Map<String, Double> =
    DistributedMutex(client, key("lock_cycle_seq") + "/lock").use { mutex ->
      mapOf(
        "kt_lock_cycle_seq" to
          sequential {
            if (!mutex.tryLock(RPC_TIMEOUT)) fail("tryLock timed out uncontended")
            if (!mutex.unlock()) fail("unlock reported a lost lock")
          },
      )
    }

  fun rwlockCycle(): Map<String, Double> =
    DistributedReadWriteLock(client, key("rwlock_read_cycle_seq") + "/lock").use { rw ->
      mapOf(
        "kt_rwlock_read_cycle_seq" to
          sequential {
            if (!rw.readLock.tryLock(RPC_TIMEOUT)) fail("read tryLock timed out uncontended")
            if (!rw.readLock.unlock()) fail("read unlock reported a lost lock")
          },
      )
    }

  fun semaphoreCycle(): Map<String, Double> =
    DistributedSemaphore(client, key("semaphore_cycle_seq") + "/sem", 3).use { sem ->
      mapOf(
        "kt_semaphore_cycle_seq" to
          sequential {
            if (!sem.tryAcquire(RPC_TIMEOUT)) fail("tryAcquire timed out uncontended")
            if (!sem.release()) fail("release reported a lost permit")
          },
      )
    }

  // LeaderLatch has no resign: a term ends with close(), and a closed latch
  // cannot start again, so one campaign + resign is a latch's whole life.
  fun electCycle(): Map<String, Double> {
    val path = key("elect_cycle_seq") + "/election"
    return mapOf(
      "kt_elect_cycle_seq" to
        sequential {
          LeaderLatch(client, path, clientId = "bench").use { latch ->
            latch.start()
            if (!latch.await(RPC_TIMEOUT)) fail("uncontended latch not elected in $RPC_TIMEOUT")
          }
        },
    )
  }

  // A LeaderSelector term: start(), the leadership block returns at once
  // (= resign), the term ends, close(). A new selector per term, as the
  // library's own LeaderLatch does (restarting one before its term's threads
  // wound down can starve its 3-thread executor).
  fun selectorCycle(): Map<String, Double> {
    val path = key("selector_cycle_seq") + "/election"
    return mapOf(
      "kt_selector_cycle_seq" to
        sequential {
          LeaderSelector(client, path, takeLeadershipBlock = { }, clientId = "bench").use { sel ->
            sel.start()
            if (!sel.waitOnLeadershipComplete(RPC_TIMEOUT)) fail("uncontended selector's term not over in $RPC_TIMEOUT")
          }
        },
    )
  }

  // LeaderSelector turnover, the shape of the bench's elect_handoff: 8
  // selectors on one election; the leader's block returns at once and its
  // selector runs again. Sample = the leader's block returning -> the next
  // leader's block entered.
  fun selectorTurnover(): Map<String, Double> {
    val path = key("elect_handoff") + "/election"
    val candidates = 8
    val warmupSamples = if (s.quick) 20 else 50
    val released = AtomicLong(0L) // System.nanoTime() of the last return; 0 = none yet
    val samples = java.util.Collections.synchronizedList(mutableListOf<Double>())
    val turns = AtomicLong(0)
    val deadline = TimeSource.Monotonic.markNow() + s.duration + 60.seconds
    val windowEnd = AtomicLong(0L)
    fun term(i: Int) =
      LeaderSelector(
        client,
        path,
        takeLeadershipBlock = {
          val now = System.nanoTime()
          val prev = released.get()
          val t = turns.incrementAndGet()
          if (prev != 0L && t > warmupSamples) samples += (now - prev) / 1e6
          if (t == warmupSamples.toLong()) windowEnd.set(now + s.duration.inWholeNanoseconds)
          released.set(System.nanoTime())
        },
        clientId = "candidate-$i",
      )
    val stuck = AtomicLong()
    val threads =
      (0 until candidates).map { i ->
        Thread {
          while (deadline.hasNotPassedNow()) {
            val we = windowEnd.get()
            if (we != 0L && System.nanoTime() > we) break
            // One selector per term, closed when the term is over.
            val finished = term(i).use { sel -> sel.start().waitUntilFinished(RPC_TIMEOUT * 2) }
            if (!finished) {
              stuck.incrementAndGet()
              log("candidate-$i: a term did not finish in ${RPC_TIMEOUT * 2}")
              break
            }
          }
        }.apply {
          isDaemon = true
          start()
        }
      }
    for (t in threads) t.join((-deadline.elapsedNow()).inWholeMilliseconds.coerceAtLeast(0) + 1000)
    if (threads.any { it.isAlive }) fail("turnover threads still running at the deadline")
    if (stuck.get() > 0) fail("${stuck.get()} terms did not finish")
    val sorted = synchronized(samples) { samples.sorted() }
    if (sorted.size < 10) fail("only ${sorted.size} turnovers measured")
    notes += "kt_elect_handoff: LeaderSelector, $candidates candidates, ${sorted.size} turnovers, " +
      "p50 %.2f p90 %.2f max %.2f ms".format(percentile(sorted, 50.0), percentile(sorted, 90.0), sorted.last())
    return mapOf("kt_elect_handoff_p50_ms" to percentile(sorted, 50.0), "kt_elect_handoff_p99_ms" to percentile(sorted, 99.0))
  }

  fun queueCycle(): Map<String, Double> {
    val q = DistributedQueue(client, key("queue_cycle_seq") + "/queue")
    return q.use {
      mapOf(
        "kt_queue_cycle_seq" to
          sequential {
            q.enqueue(VALUE)
            val got = q.poll(RPC_TIMEOUT) ?: fail("dequeue timed out")
            if (got.toString(Charsets.UTF_8) != VALUE) fail("dequeued another value")
          },
      )
    }
  }

  fun priorityQueueCycle(): Map<String, Double> {
    val q = DistributedPriorityQueue(client, key("priority_queue_cycle_seq") + "/queue", 0.milliseconds)
    return q.use {
      mapOf(
        "kt_priority_queue_cycle_seq" to
          sequential {
            q.enqueue(VALUE, 10)
            val got = q.poll(RPC_TIMEOUT) ?: fail("dequeue timed out")
            if (got.toString(Charsets.UTF_8) != VALUE) fail("dequeued another value")
          },
      )
    }
  }

  fun workqueueCycle(): Map<String, Double> =
    DistributedWorkQueue(client, key("workqueue_cycle_seq") + "/queue").use { q ->
      mapOf(
        "kt_workqueue_cycle_seq" to
          sequential {
            q.enqueue(VALUE)
            val item = q.receive(RPC_TIMEOUT) ?: fail("receive timed out")
            if (item.value.toString(Charsets.UTF_8) != VALUE) fail("received another value")
            if (!item.ack()) fail("ack reported a lost claim")
          },
      )
    }

  // 2 producer objects (16 coroutines each, the backlog kept under 2000) and
  // 8 consumer objects, each a coroutine looping awaitReceive + awaitAck.
  // Items acked per second of the window. (All suspending calls share
  // Dispatchers.IO's 64 threads: 32 producers + 8 consumers fit.)
  fun workqueueThroughput(): Map<String, Double> {
    val path = key("workqueue_throughput_8c") + "/queue"
    val producers = (0 until 2).map { DistributedWorkQueue(client, path, clientId = "producer-$it") }
    val consumers = (0 until 8).map { DistributedWorkQueue(client, path, clientId = "consumer-$it") }
    val enqueued = AtomicLong()
    val acked = AtomicLong()
    val stale = AtomicLong()
    try {
      val rate =
        runBlocking(Dispatchers.Default) {
          val jobs = mutableListOf<Job>()
          for (p in producers) {
            repeat(16) {
              jobs +=
                launch {
                  while (isActive) {
                    if (enqueued.get() - acked.get() >= 2000) {
                      delay(1)
                      continue
                    }
                    enqueued.incrementAndGet()
                    withTimeout(RPC_TIMEOUT) { p.awaitEnqueue(VALUE) }
                  }
                }
            }
          }
          for (c in consumers) {
            jobs +=
              launch {
                while (isActive) {
                  val item = c.awaitReceive(1.seconds) ?: continue
                  if (withTimeout(RPC_TIMEOUT) { item.awaitAck() }) acked.incrementAndGet() else stale.incrementAndGet()
                }
              }
          }
          delay(maxOf(s.warmup, s.jvmWarmup))
          val a0 = acked.get()
          val t0 = TimeSource.Monotonic.markNow()
          delay(s.duration)
          val n = acked.get() - a0
          val secs = t0.elapsedNow().toDouble(kotlin.time.DurationUnit.SECONDS)
          withTimeout(60.seconds) { jobs.forEach { it.cancelAndJoin() } }
          n / secs
        }
      notes += "kt_workqueue_throughput_8c: ${stale.get()} acks reported a lost claim; backlog at the end ${enqueued.get() - acked.get()}"
      return mapOf("kt_workqueue_throughput_8c" to rate)
    } finally {
      (producers + consumers).forEach { runCatching { it.close() } }
    }
  }

  fun counterSeq(): Map<String, Double> =
    DistributedAtomicLong(client, key("counter_add_seq") + "/counter").use { c ->
      c.start()
      mapOf("kt_counter_add_seq" to sequential { c.add(1) })
    }

  // 16 objects on one counter, each a coroutine looping awaitAdd(1).
  fun counter16(): Map<String, Double> {
    val path = key("counter_add_16c") + "/counter"
    val counters = (0 until 16).map { DistributedAtomicLong(client, path).start() }
    try {
      val adds = AtomicLong()
      val stop = java.util.concurrent.atomic.AtomicBoolean(false)
      val rate =
        runBlocking(Dispatchers.Default) {
          val jobs =
            counters.map { c ->
              launch {
                while (!stop.get()) {
                  withTimeout(RPC_TIMEOUT) { c.awaitAdd(1) }
                  adds.incrementAndGet()
                }
              }
            }
          delay(maxOf(s.warmup, s.jvmWarmup))
          val a0 = adds.get()
          val t0 = TimeSource.Monotonic.markNow()
          delay(s.duration)
          val n = adds.get() - a0
          val secs = t0.elapsedNow().toDouble(kotlin.time.DurationUnit.SECONDS)
          stop.set(true)
          withTimeout(60.seconds) { jobs.forEach { it.join() } }
          n / secs
        }
      val total = counters.first().get()
      if (total != adds.get()) fail("counter is $total after ${adds.get()} adds")
      return mapOf("kt_counter_add_16c" to rate)
    } finally {
      counters.forEach { runCatching { it.close() } }
    }
  }

  // 16 parties; 15 wait (coroutines, await(timeout)), and once etcd shows
  // their 15 registrations the 16th arrives. Sample = 16th arrival -> all 16
  // returned. A barrier trips once, so each round has a path of its own.
  fun barrierCount(): Map<String, Double> {
    val parties = 16
    val warmupRounds = if (s.quick) 3 else 5
    val rounds = if (s.quick) 15 else 40
    val ms = mutableListOf<Double>()
    runBlocking(Dispatchers.Default) {
      for (round in 0 until warmupRounds + rounds) {
        val path = key("barrier_count") + "/round-$round"
        val barriers = (0 until parties).map { DistributedBarrierWithCount(client, path, parties) }
        try {
          coroutineScope {
            val first = (0 until parties - 1).map { i -> async { barriers[i].await(RPC_TIMEOUT * 2) } }
            val end = TimeSource.Monotonic.markNow() + RPC_TIMEOUT
            while (barriers.last().waiterCount < parties - 1) {
              if (end.hasPassedNow()) fail("barrier_count: ${parties - 1} parties did not arrive in $RPC_TIMEOUT")
              delay(1)
            }
            val start = TimeSource.Monotonic.markNow()
            val last = async { barriers.last().await(RPC_TIMEOUT * 2) }
            val all = (first + last).awaitAll()
            val took = start.elapsedNow().toDouble(kotlin.time.DurationUnit.MILLISECONDS)
            if (!all.all { it }) fail("barrier_count: a party timed out")
            if (round >= warmupRounds) ms += took
          }
        } finally {
          barriers.forEach { runCatching { it.close() } }
        }
      }
    }
    ms.sort()
    notes += "kt_barrier_count: $parties parties on one client, $rounds rounds: p50 %.2f p90 %.2f max %.2f ms"
      .format(percentile(ms, 50.0), percentile(ms, 90.0), ms.last())
    return mapOf("kt_barrier_count_p50_ms" to percentile(ms, 50.0))
  }

  // A PathChildrenCache (BUILD_INITIAL_CACHE) with a listener; put a key with
  // the send time in its value, wait until the listener ran for it, repeat.
  fun cachePropagation(): Map<String, Double> {
    val path = key("cache_propagation") + "/cache"
    val warm = if (s.quick) 20 else 50
    val measured = if (s.quick) 200 else 500
    val seen = LinkedBlockingQueue<Pair<String, Long>>()
    val ms = mutableListOf<Double>()
    PathChildrenCache(client, path).use { cache ->
      cache.addListener { e: PathChildrenCacheEvent ->
        val now = System.nanoTime()
        if (e.type == PathChildrenCacheEvent.Type.CHILD_ADDED || e.type == PathChildrenCacheEvent.Type.CHILD_UPDATED) {
          seen.put(e.childName to now)
        }
      }
      cache.start(PathChildrenCache.StartMode.BUILD_INITIAL_CACHE, waitOnStartComplete = true)
      for (i in 0 until warm + measured) {
        val child = "k$i"
        val sent = System.nanoTime()
        client.kvClient.put(bytes("$path/$child"), bytes(sent.toString())).get(RPC_TIMEOUT.inWholeMilliseconds, TimeUnit.MILLISECONDS)
        val end = TimeSource.Monotonic.markNow() + RPC_TIMEOUT
        while (true) {
          val left = -end.elapsedNow()
          if (!left.isPositive()) fail("the cache's listener never saw $child")
          val (name, at) = seen.poll(left.inWholeMilliseconds + 1, TimeUnit.MILLISECONDS) ?: continue
          if (name.trimStart('/') == child || name.endsWith("/$child") || name == child) {
            if (i >= warm) ms += (at - sent) / 1e6
            break
          }
        }
      }
    }
    ms.sort()
    return mapOf("kt_cache_propagation_p50_ms" to percentile(ms, 50.0), "kt_cache_propagation_p99_ms" to percentile(ms, 99.0))
  }

  fun instance(i: Int) = ServiceInstance("api", """{"zone":"eu-west-1a"}""", address = "10.0.0.$i", port = 8080)

  // ServiceDiscovery.registerService, a new instance each time (each on a
  // self-healing lease of its own); unregistered when the discovery closes.
  fun discoveryRegister(): Map<String, Double> {
    var i = 0
    val rate =
      ServiceDiscovery(client, key("discovery_register_seq") + "/services").use { sd ->
        sequential { sd.registerService(instance(i++ % 250)) }
      }
    notes += "kt_discovery_register_seq: $i registrations"
    return mapOf("kt_discovery_register_seq" to rate)
  }

  // Nanoseconds per ServiceProvider.getInstance() (started: watch-backed
  // cache) among 8 instances, round robin.
  fun providerPick(): Map<String, Double> =
    ServiceDiscovery(client, key("provider_pick_ns") + "/services").use { sd ->
      repeat(8) { sd.registerService(instance(it)) }
      val provider = sd.serviceProvider("api", RoundRobinStrategy())
      provider.start()
      val end = TimeSource.Monotonic.markNow() + RPC_TIMEOUT
      while (provider.getAllInstances().size < 8) {
        if (end.hasPassedNow()) fail("the provider never saw 8 instances")
        Thread.sleep(1)
      }
      val picks = if (s.quick) 200_000 else 2_000_000
      var sink = 0L
      repeat(picks / 10) { sink += provider.getInstance().address.length }
      val t0 = System.nanoTime()
      repeat(picks) { sink += provider.getInstance().address.length }
      val ns = (System.nanoTime() - t0).toDouble() / picks
      if (sink == 0L) fail("no picks")
      mapOf("kt_provider_pick_ns" to ns)
    }

  // Threads and RSS of this JVM with N waiters parked on one held lock, each
  // a coroutine in the library's suspending mutex.withLock(timeout) { } (which
  // confines every call to a thread of its own, as the lock is thread-owned).
  // Parked = N+1 keys under the lock's prefix (etcd's Lock RPC). The waiters
  // are then cancelled (their leases revoked) and the holder unlocks.
  fun parkedWaiters(): Map<String, Double> {
    val path = key("waiters") + "/lock"
    val n = s.waiters
    System.gc()
    Thread.sleep(200)
    val threads0 = threadCount()
    val rss0 = rssMb()
    // A 30 s lease TTL (the default is 2 s): starting 1,000 threads on 2 cores
    // can starve a 2 s keep-alive, and a holder whose lease expires hands the
    // lock on, so the waiters would not stay parked.
    val holder = DistributedMutex(client, path, leaseTtlSecs = 30, clientId = "holder")
    val waiters = DistributedMutex(client, path, leaseTtlSecs = 30, clientId = "waiters")
    try {
      if (!holder.tryLock(RPC_TIMEOUT)) fail("the holder could not lock")
      return runBlocking(Dispatchers.Default) {
        val t0 = TimeSource.Monotonic.markNow()
        val jobs = (0 until n).map { launch { waiters.withLock(120.seconds) { } } }
        try {
          val end = TimeSource.Monotonic.markNow() + 120.seconds
          var parked = 0L
          while (parked < n + 1) {
            if (end.hasPassedNow()) fail("only ${parked - 1} of $n waiters parked in 120 s")
            delay(200)
            // A count that times out (etcd busy granting 1,000 leases) is retried.
            parked = runCatching { countKeys("$path/") }.getOrDefault(parked)
          }
          val parkedIn = t0.elapsedNow()
          delay(500) // let the last waiters settle
          val threads = threadCount()
          val rss = rssMb()
          notes += "kt_waiters: $n waiters parked in DistributedMutex(leaseTtlSecs = 30).withLock: $threads threads (idle $threads0), " +
            "RSS %.0f MB (idle %.0f MB); all parked after $parkedIn".format(rss, rss0)
          mapOf(
            "kt_waiters_threads" to threads.toDouble(),
            "kt_waiters_rss_mb" to rss,
            "kt_idle_threads" to threads0.toDouble(),
            "kt_idle_rss_mb" to rss0,
          )
        } finally {
          val c0 = TimeSource.Monotonic.markNow()
          withTimeout(120.seconds) { jobs.forEach { it.cancelAndJoin() } }
          log("kt_waiters: $n waiters cancelled in ${c0.elapsedNow()}")
        }
      }
    } finally {
      runCatching { holder.unlock() }
      runCatching { holder.close() }
      runCatching { waiters.close() }
    }
  }

  fun countKeys(prefix: String): Long =
    client.kvClient
      .get(bytes(prefix), GetOption.builder().isPrefix(true).withCountOnly(true).build())
      .get(RPC_TIMEOUT.inWholeMilliseconds, TimeUnit.MILLISECONDS)
      .count
}

fun threadCount(): Int = File("/proc/self/task").list()?.size ?: Thread.getAllStackTraces().size

fun rssMb(): Double =
  File("/proc/self/status").readLines().firstOrNull { it.startsWith("VmRSS:") }
    ?.split(Regex("\\s+"))?.get(1)?.toDouble()?.div(1024.0) ?: Double.NaN

fun percentile(sorted: List<Double>, p: Double): Double {
  val rank = ceil(p / 100.0 * sorted.size).toInt()
  return sorted[maxOf(rank, 1) - 1]
}

fun jsonString(s: String): String =
  buildString {
    append('"')
    for (c in s) {
      when {
        c == '"' -> append("\\\"")
        c == '\\' -> append("\\\\")
        c == '\n' -> append("\\n")
        c < ' ' -> append("\\u%04x".format(c.code))
        else -> append(c)
      }
    }
    append('"')
  }

fun json(p: Peer): String =
  buildString {
    append("{")
    val parts = mutableListOf<String>()
    for ((k, v) in p.out) parts += "${jsonString(k)}: ${if (v.isFinite()) "%.4f".format(java.util.Locale.ROOT, v) else "null"}"
    parts += "\"_errors\": {" + p.errors.entries.joinToString(", ") { "${jsonString(it.key)}: ${jsonString(it.value)}" } + "}"
    parts += "\"_notes\": [" + p.notes.joinToString(", ") { jsonString(it) } + "]"
    append(parts.joinToString(", "))
    append("}")
  }

const val USAGE =
  "usage: java -jar kotlin-peer.jar --endpoints http://H:P[,...] --prefix fresh/prefix " +
    "[--quick] [--only kt_a,kt_b] [--duration-ms N] [--warmup-ms N] [--jvm-warmup-ms N] [--waiters N] [--deadline-s N]\n" +
    "       java -jar kotlin-peer.jar lock --endpoints http://H:P[,...] --name NAME --log FILE --tag TAG " +
    "[--hold-ms N] [--release-file F] [--timeout-ms N]"

// `lock` mode, for the interoperability tests: one DistributedMutex
// acquisition on NAME (etcd's Lock RPC), with "start TAG" and "end TAG"
// appended to FILE around a hold of --hold-ms, and "held" on stdout once it
// holds (with --release-file, the hold ends as soon as F exists, or after
// --hold-ms at the latest). Exit 0 after a clean release, 3 when the lock was not granted
// within --timeout-ms, 1 when the hold was lost, 2 on bad usage.
fun lockMode(args: List<String>, stdout: java.io.PrintStream): Int {
  var endpoints = listOf<String>()
  var name = ""
  var log = ""
  var tag = ""
  var holdMs = 0L
  var releaseFile = ""
  var timeoutMs = 30_000L
  var i = 0
  fun next(): String = if (i + 1 < args.size) args[++i] else ""
  while (i < args.size) {
    when (args[i]) {
      "--endpoints" -> endpoints = next().split(",").filter { it.isNotBlank() }.map { if ("://" in it) it else "http://$it" }
      "--name" -> name = next()
      "--log" -> log = next()
      "--tag" -> tag = next()
      "--hold-ms" -> holdMs = next().toLongOrNull() ?: -1
      "--release-file" -> releaseFile = next()
      "--timeout-ms" -> timeoutMs = next().toLongOrNull() ?: -1
      else -> { System.err.println("unknown argument ${args[i]}\n$USAGE"); return 2 }
    }
    i++
  }
  if (endpoints.isEmpty() || name.isEmpty() || log.isEmpty() || tag.isEmpty() || holdMs < 0 || timeoutMs <= 0) {
    System.err.println(USAGE)
    return 2
  }
  val client = connectToEtcd(endpoints)
  try {
    DistributedMutex(client, name).use { mutex ->
      if (!mutex.tryLock(timeoutMs.milliseconds)) {
        log("lock: $name not granted within $timeoutMs ms")
        return 3
      }
      val out = File(log)
      out.appendText("start $tag\n")
      stdout.println("held")
      stdout.flush()
      val until = TimeSource.Monotonic.markNow() + holdMs.milliseconds
      while (!until.hasPassedNow() && !(releaseFile.isNotEmpty() && File(releaseFile).exists())) Thread.sleep(5)
      out.appendText("end $tag\n")
      if (!mutex.unlock()) {
        log("lock: the hold on $name was lost")
        return 1
      }
      return 0
    }
  } finally {
    runCatching { client.close() }
  }
}

fun main(args: Array<String>) {
  // stdout carries the JSON alone: anything else printing there (kotlin-logging
  // announces itself on stdout) goes to stderr.
  val stdout = System.out
  System.setOut(System.err)
  if (args.firstOrNull() == "lock") {
    // Recipes leave non-daemon executor threads behind; exit explicitly.
    Runtime.getRuntime().halt(lockMode(args.drop(1), stdout))
  }
  var endpoints = listOf<String>()
  var prefix = ""
  var quick = false
  var only = setOf<String>()
  var durationMs = -1L
  var warmupMs = -1L
  var waiters = 1000
  var deadlineS = 600L
  var jvmWarmupMs = 2000L
  var i = 0
  fun next(): String = if (i + 1 < args.size) args[++i] else { System.err.println(USAGE); exitProcess(2) }
  while (i < args.size) {
    when (args[i]) {
      "--endpoints" -> endpoints = next().split(",").filter { it.isNotBlank() }.map { if ("://" in it) it else "http://$it" }
      "--prefix" -> prefix = next().trimEnd('/')
      "--quick" -> quick = true
      "--only" -> only = next().split(",").filter { it.isNotBlank() }.map { if (it.startsWith("kt_")) it else "kt_$it" }.toSet()
      "--duration-ms" -> durationMs = next().toLong()
      "--warmup-ms" -> warmupMs = next().toLong()
      "--waiters" -> waiters = next().toInt()
      "--deadline-s" -> deadlineS = next().toLong()
      "--jvm-warmup-ms" -> jvmWarmupMs = next().toLong()
      "-h", "--help" -> { stdout.println(USAGE); exitProcess(0) }
      else -> { System.err.println("unknown argument ${args[i]}\n$USAGE"); exitProcess(2) }
    }
    i++
  }
  if (endpoints.isEmpty() || prefix.isEmpty()) {
    System.err.println(USAGE)
    exitProcess(2)
  }
  val duration = if (durationMs >= 0) durationMs.milliseconds else if (quick) 2.seconds else 5.seconds
  val warmup = if (warmupMs >= 0) warmupMs.milliseconds else (duration / 5).coerceIn(200.milliseconds, 1.seconds)
  val s = Settings(endpoints, prefix, quick, only, duration, warmup, waiters, jvmWarmupMs.milliseconds)

  // Every wait below has its own bound; this one bounds the whole run.
  Thread {
    Thread.sleep(deadlineS * 1000)
    log("global deadline of $deadlineS s passed; exiting")
    Runtime.getRuntime().halt(2)
  }.apply { isDaemon = true }.start()

  val client = connectToEtcd(endpoints)
  val p = Peer(s, client)
  try {
    p.run("kt_put_seq") { p.putSeq() }
    p.run("kt_lock_cycle_seq") { p.lockCycle() }
    p.run("kt_rwlock_read_cycle_seq") { p.rwlockCycle() }
    p.run("kt_semaphore_cycle_seq") { p.semaphoreCycle() }
    p.run("kt_elect_cycle_seq") { p.electCycle() }
    p.run("kt_selector_cycle_seq") { p.selectorCycle() }
    p.run("kt_elect_handoff_p50_ms", "kt_elect_handoff_p99_ms") { p.selectorTurnover() }
    p.run("kt_queue_cycle_seq") { p.queueCycle() }
    p.run("kt_priority_queue_cycle_seq") { p.priorityQueueCycle() }
    p.run("kt_workqueue_cycle_seq") { p.workqueueCycle() }
    p.run("kt_workqueue_throughput_8c") { p.workqueueThroughput() }
    p.run("kt_counter_add_seq") { p.counterSeq() }
    p.run("kt_counter_add_16c") { p.counter16() }
    p.run("kt_barrier_count_p50_ms") { p.barrierCount() }
    p.run("kt_cache_propagation_p50_ms", "kt_cache_propagation_p99_ms") { p.cachePropagation() }
    p.run("kt_discovery_register_seq") { p.discoveryRegister() }
    p.run("kt_provider_pick_ns") { p.providerPick() }
    p.run("kt_waiters_threads", "kt_waiters_rss_mb", "kt_idle_threads", "kt_idle_rss_mb") { p.parkedWaiters() }
    val unknown = s.only - p.out.keys - p.errors.keys
    for (u in unknown) p.errors[u] = "no such metric"
  } finally {
    p.cleanup("")
    stdout.println(json(p))
    stdout.flush()
    runCatching { client.close() }
  }
  // Recipes leave non-daemon executor threads behind; exit explicitly.
  Runtime.getRuntime().halt(if (p.errors.isEmpty()) 0 else 1)
}
