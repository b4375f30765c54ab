// Command clientgo-bench is the client-go peer of korovod's Kubernetes client benchmark: the same
// work as build/bin/korovod-kube-bench against the same API server, printed as the JSON document
// described in bench/README.md.
//
//	(a) create N ConfigMaps in a fresh namespace with C requests in flight
//	(b) informer sync of M pre-created ConfigMaps (~1 KiB of data each): start until HasSynced
//	(c) the informer cache's memory: Go heap (HeapInuse after GC) and RSS, before vs after sync
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const clientName = "client-go v0.34.4"

// benchLabel marks the benchmark's objects: korovod-bench=create or korovod-bench=sync. The
// informer selects korovod-bench=sync, so objects the control plane adds to every namespace
// (the kube-root-ca.crt ConfigMap) are not counted.
const benchLabel = "korovod-bench"

type createResult struct {
	Objects           int     `json:"objects"`
	Concurrency       int     `json:"concurrency"`
	Seconds           float64 `json:"seconds"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	Errors            int64   `json:"errors"`
}

type syncResult struct {
	Objects          int     `json:"objects"`
	ObjectDataBytes  int     `json:"object_data_bytes"`
	PrepareSeconds   float64 `json:"prepare_seconds"`
	Seconds          float64 `json:"seconds"`
	ObjectsPerSecond float64 `json:"objects_per_second"`
	CachedObjects    int     `json:"cached_objects"`
}

type memoryResult struct {
	Objects         int    `json:"objects"`
	HeapBeforeBytes uint64 `json:"heap_before_bytes"`
	HeapAfterBytes  uint64 `json:"heap_after_bytes"`
	HeapDeltaBytes  int64  `json:"heap_delta_bytes"`
	RSSBeforeBytes  uint64 `json:"rss_before_bytes"`
	RSSAfterBytes   uint64 `json:"rss_after_bytes"`
	RSSDeltaBytes   int64  `json:"rss_delta_bytes"`
	BytesPerObject  int64  `json:"bytes_per_object"`
	HeapMeasure     string `json:"heap_measure"`
}

type report struct {
	Schema        int          `json:"schema"`
	Client        string       `json:"client"`
	ServerVersion string       `json:"server_version"`
	ContentType   string       `json:"content_type"`
	QPS           float32      `json:"qps"`
	Burst         int          `json:"burst"`
	Create        createResult `json:"create"`
	InformerSync  syncResult   `json:"informer_sync"`
	CacheMemory   memoryResult `json:"cache_memory"`
}

func rssBytes() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "VmRSS:") {
			fields := strings.Fields(line)
			if len(fields) >= 2 {
				kb, _ := strconv.ParseUint(fields[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

func heapInuse() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "clientgo-bench: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "clientgo-bench: "+format+"\n", args...)
}

// createConfigMaps creates n ConfigMaps named prefix-%05d with `workers` requests in flight.
func createConfigMaps(ctx context.Context, cs kubernetes.Interface, ns, prefix, phase string, n, workers int,
	data map[string]string) (time.Duration, int64) {
	var next atomic.Int64
	var errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{
						Name:   fmt.Sprintf("%s-%05d", prefix, i),
						Labels: map[string]string{benchLabel: phase},
					},
					Data: data,
				}
				if data == nil {
					cm.Data = map[string]string{"index": strconv.Itoa(i)}
				}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					if errs.Add(1) <= 3 {
						logf("create %s/%s: %v", ns, cm.Name, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), errs.Load()
}

func createNamespace(ctx context.Context, cs kubernetes.Interface, name string) {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		fatalf("create namespace %s: %v", name, err)
	}
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default $KUBECONFIG)")
	creates := flag.Int("creates", 2000, "(a) ConfigMaps to create")
	workers := flag.Int("concurrency", 16, "requests in flight for creates")
	syncObjects := flag.Int("sync-objects", 5000, "(b) ConfigMaps the informer syncs")
	dataBytes := flag.Int("object-bytes", 1024, "bytes of data in each synced ConfigMap")
	qps := flag.Float64("qps", 1000, "client-side QPS limit")
	burst := flag.Int("burst", 1000, "client-side burst")
	protobuf := flag.Bool("protobuf", false, "use protobuf instead of JSON on the wire")
	keep := flag.Bool("keep", false, "keep the benchmark namespaces")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: clientgo-bench --kubeconfig FILE [flags]\n"+
			"Prints one JSON document (schema: bench/README.md) on stdout.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *kubeconfig == "" {
		fatalf("--kubeconfig (or KUBECONFIG) is required")
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fatalf("kubeconfig %s: %v", *kubeconfig, err)
	}
	cfg.QPS = float32(*qps)
	cfg.Burst = *burst
	cfg.ContentType = "application/json"
	if *protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fatalf("client: %v", err)
	}
	ctx := context.Background()
	sv, err := cs.Discovery().ServerVersion()
	if err != nil {
		fatalf("server version: %v", err)
	}

	suffix := fmt.Sprintf("%d-%04d", time.Now().Unix(), rand.Intn(10000))
	nsCreate := "bench-clientgo-create-" + suffix
	nsSync := "bench-clientgo-sync-" + suffix
	rep := report{Schema: 1, Client: clientName, ServerVersion: sv.GitVersion,
		ContentType: cfg.ContentType, QPS: cfg.QPS, Burst: cfg.Burst}

	// (a) creates
	createNamespace(ctx, cs, nsCreate)
	logf("(a) creating %d ConfigMaps in %s with %d in flight", *creates, nsCreate, *workers)
	d, errs := createConfigMaps(ctx, cs, nsCreate, "cm", "create", *creates, *workers, nil)
	rep.Create = createResult{Objects: *creates, Concurrency: *workers, Seconds: d.Seconds(),
		RequestsPerSecond: float64(*creates) / d.Seconds(), Errors: errs}
	logf("(a) %.0f req/s", rep.Create.RequestsPerSecond)

	// (b) informer sync: pre-create the objects, then time start -> HasSynced.
	createNamespace(ctx, cs, nsSync)
	payload := strings.Repeat("x", *dataBytes)
	logf("(b) preparing %d ConfigMaps with %d bytes of data in %s", *syncObjects, *dataBytes, nsSync)
	prep, perrs := createConfigMaps(ctx, cs, nsSync, "obj", "sync", *syncObjects, *workers,
		map[string]string{"payload": payload})
	if perrs > 0 {
		fatalf("(b) %d errors creating the objects to sync", perrs)
	}
	payload = ""

	heapBefore := heapInuse()
	rssBefore := rssBytes()
	stop := make(chan struct{})
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(nsSync),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = benchLabel + "=sync" }))
	inf := factory.Core().V1().ConfigMaps().Informer()
	start := time.Now()
	factory.Start(stop)
	// cache.WaitForCacheSync polls HasSynced every 100 ms, which would round client-go's time
	// up to the next 100 ms; poll every millisecond instead so both peers' times are exact to
	// about 1 ms (korovod's side waits on a condition variable).
	deadline := start.Add(5 * time.Minute)
	for !inf.HasSynced() {
		if time.Now().After(deadline) {
			fatalf("(b) informer did not sync")
		}
		time.Sleep(time.Millisecond)
	}
	syncDur := time.Since(start)
	cached := len(inf.GetStore().ListKeys())
	rep.InformerSync = syncResult{Objects: *syncObjects, ObjectDataBytes: *dataBytes,
		PrepareSeconds: prep.Seconds(), Seconds: syncDur.Seconds(),
		ObjectsPerSecond: float64(*syncObjects) / syncDur.Seconds(), CachedObjects: cached}
	logf("(b) synced %d objects in %.3fs", cached, syncDur.Seconds())

	// (c) the cache's memory, with the informer still running and holding its store.
	heapAfter := heapInuse()
	rssAfter := rssBytes()
	rep.CacheMemory = memoryResult{Objects: cached, HeapBeforeBytes: heapBefore, HeapAfterBytes: heapAfter,
		HeapDeltaBytes: int64(heapAfter) - int64(heapBefore), RSSBeforeBytes: rssBefore,
		RSSAfterBytes: rssAfter, RSSDeltaBytes: int64(rssAfter) - int64(rssBefore),
		HeapMeasure: "go runtime.MemStats.HeapInuse after runtime.GC()"}
	if cached > 0 {
		rep.CacheMemory.BytesPerObject = rep.CacheMemory.HeapDeltaBytes / int64(cached)
	}
	logf("(c) heap +%d bytes (%d per object), rss +%d bytes", rep.CacheMemory.HeapDeltaBytes,
		rep.CacheMemory.BytesPerObject, rep.CacheMemory.RSSDeltaBytes)
	// Keep the informer (and so its store) alive until after the measurement.
	runtime.KeepAlive(inf.GetStore())
	close(stop)
	factory.Shutdown()

	if !*keep {
		for _, ns := range []string{nsCreate, nsSync} {
			if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
				logf("delete namespace %s: %v", ns, err)
			}
		}
	}
	out, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Println(string(out))
	if rep.Create.Errors > 0 || cached != *syncObjects {
		os.Exit(1)
	}
}
