/* Hand-encoded protobuf bodies for each covered kind decode to the expected JSON. */
#include "proto_test.h"

/* ObjectMeta {name, labels...}: pairs of label key/value follow name, NULL-terminated. */
static void e_meta(struct buf *b, uint32_t num, const char *name, ...)
{
	struct buf m = BUF_INIT;
	va_list ap;
	const char *k;

	if (name)
		e_str(&m, 1, name);
	e_bytes(&m, 8, "", 0);      /* zero creationTimestamp, as Go sends it */
	va_start(ap, name);
	while ((k = va_arg(ap, const char *)))
		e_map(&m, 11, k, va_arg(ap, const char *));
	va_end(ap);
	e_msg(b, num, &m);
}

/* What `kubectl create deployment web --image=nginx --replicas=2` sends, including the empty
 * strings and zeros that gogo-protobuf writes for every non-pointer field. */
static void test_deployment(void **state)
{
	struct buf dep = BUF_INIT, spec = BUF_INIT, sel = BUF_INIT, tmpl = BUF_INIT,
		   pod = BUF_INIT, c = BUF_INIT, res = BUF_INIT, strat = BUF_INIT, body = BUF_INIT,
		   meta = BUF_INIT;

	e_str(&meta, 1, "web");
	e_str(&meta, 2, "");
	e_str(&meta, 3, "");
	e_int(&meta, 7, 0);
	e_bytes(&meta, 8, "", 0);
	e_map(&meta, 11, "app", "web");
	e_msg(&dep, 1, &meta);
	e_int(&spec, 1, 2);
	e_map(&sel, 1, "app", "web");
	e_msg(&spec, 2, &sel);
	e_meta(&tmpl, 1, NULL, "app", "web", NULL);
	e_str(&c, 1, "nginx");
	e_str(&c, 2, "nginx");
	e_msg(&c, 8, &res);
	e_str(&c, 13, "");
	e_int(&c, 16, 0);
	e_msg(&pod, 2, &c);
	e_str(&pod, 3, "");
	e_int(&pod, 11, 0);
	e_msg(&tmpl, 2, &pod);
	e_msg(&spec, 3, &tmpl);
	e_msg(&spec, 4, &strat);
	e_int(&spec, 5, 0);
	e_msg(&dep, 2, &spec);
	e_bytes(&dep, 3, "\x08\x00", 2);   /* status {observedGeneration 0}: shown as {} */
	e_body(&body, "apps/v1", "Deployment", &dep);
	check_decode(&body,
		"{'kind':'Deployment','apiVersion':'apps/v1',"
		"'metadata':{'name':'web','creationTimestamp':null,'labels':{'app':'web'}},"
		"'spec':{'replicas':2,'selector':{'matchLabels':{'app':'web'}},"
		"'template':{'metadata':{'creationTimestamp':null,'labels':{'app':'web'}},"
		"'spec':{'containers':[{'name':'nginx','image':'nginx','resources':{}}]}},"
		"'strategy':{}},'status':{}}", "deployment");
	buf_release(&body);
}

static void test_deployment_rolling_update(void **state)
{
	struct buf dep = BUF_INIT, spec = BUF_INIT, strat = BUF_INIT, ru = BUF_INIT,
		   mu = BUF_INIT, ms = BUF_INIT, body = BUF_INIT;

	e_meta(&dep, 1, "d", NULL);
	e_int(&spec, 1, 0);                /* replicas is a pointer: 0 is kept */
	e_str(&strat, 1, "RollingUpdate");
	e_int(&mu, 1, 1);
	e_str(&mu, 3, "25%");
	e_msg(&ru, 1, &mu);
	e_int(&ms, 1, 0);
	e_int(&ms, 2, 3);
	e_msg(&ru, 2, &ms);
	e_msg(&strat, 2, &ru);
	e_msg(&spec, 4, &strat);
	e_int(&spec, 6, 10);
	e_int(&spec, 7, 1);
	e_int(&spec, 9, 600);
	e_msg(&dep, 2, &spec);
	e_body(&body, "apps/v1", "Deployment", &dep);
	check_decode(&body,
		"{'kind':'Deployment','apiVersion':'apps/v1',"
		"'metadata':{'name':'d','creationTimestamp':null},"
		"'spec':{'replicas':0,'strategy':{'type':'RollingUpdate','rollingUpdate':"
		"{'maxUnavailable':'25%','maxSurge':3}},'revisionHistoryLimit':10,'paused':true,"
		"'progressDeadlineSeconds':600}}", "rolling update");
	buf_release(&body);
}

static void test_namespace(void **state)
{
	struct buf ns = BUF_INIT, spec = BUF_INIT, status = BUF_INIT, body = BUF_INIT;

	e_meta(&ns, 1, "team-a", NULL);
	e_msg(&ns, 2, &spec);
	e_str(&status, 1, "");
	e_msg(&ns, 3, &status);
	e_body(&body, "v1", "Namespace", &ns);
	check_decode(&body,
		"{'kind':'Namespace','apiVersion':'v1','metadata':{'name':'team-a',"
		"'creationTimestamp':null},'spec':{},'status':{}}", "namespace");
	buf_release(&body);
}

static void test_configmap(void **state)
{
	struct buf cm = BUF_INIT, body = BUF_INIT;

	e_meta(&cm, 1, "cfg", NULL);
	e_map(&cm, 2, "a", "1");
	e_map(&cm, 2, "b", "hello world");
	e_map(&cm, 2, "empty", "");
	e_bytes(&cm, 3, "\x0a\x03" "bin" "\x12\x03\x00\xff\x10", 10);
	e_body(&body, "v1", "ConfigMap", &cm);
	check_decode(&body,
		"{'kind':'ConfigMap','apiVersion':'v1','metadata':{'name':'cfg',"
		"'creationTimestamp':null},'data':{'a':'1','b':'hello world','empty':''},"
		"'binaryData':{'bin':'AP8Q'}}", "configmap");
	buf_release(&body);
}

static void test_secret(void **state)
{
	struct buf s = BUF_INIT, body = BUF_INIT;

	e_meta(&s, 1, "sec", NULL);
	e_map(&s, 2, "user", "admin");
	e_map(&s, 2, "pw", "s3cr3t!");
	e_map(&s, 2, "one", "a");
	e_map(&s, 2, "two", "ab");
	e_str(&s, 3, "Opaque");
	e_int(&s, 5, 1);
	e_body(&body, "v1", "Secret", &s);
	check_decode(&body,
		"{'kind':'Secret','apiVersion':'v1','metadata':{'name':'sec',"
		"'creationTimestamp':null},'data':{'user':'YWRtaW4=','pw':'czNjcjN0IQ==',"
		"'one':'YQ==','two':'YWI='},'type':'Opaque','immutable':true}", "secret");
	buf_release(&body);
}

static void e_port(struct buf *spec, const char *name, int port, const char *tstr, int tint,
		   int node_port)
{
	struct buf p = BUF_INIT, t = BUF_INIT;

	e_str(&p, 1, name);
	e_str(&p, 2, "TCP");
	e_int(&p, 3, port);
	e_int(&t, 1, tstr ? 1 : 0);
	e_int(&t, 2, tint);
	e_str(&t, 3, tstr ? tstr : "");
	e_msg(&p, 4, &t);
	e_int(&p, 5, node_port);
	e_msg(spec, 1, &p);
}

static void test_service(void **state)
{
	struct buf svc = BUF_INIT, spec = BUF_INIT, st = BUF_INIT, lb = BUF_INIT, body = BUF_INIT;

	e_meta(&svc, 1, "web", "app", "web", NULL);
	e_port(&spec, "http", 80, NULL, 8080, 0);
	e_port(&spec, "metrics", 9090, "metrics", 0, 30090);
	e_map(&spec, 2, "app", "web");
	e_str(&spec, 3, "");
	e_str(&spec, 4, "NodePort");
	e_str(&spec, 18, "10.0.0.1");
	e_str(&spec, 19, "IPv4");
	e_str(&spec, 22, "Cluster");
	e_msg(&svc, 2, &spec);
	e_msg(&st, 1, &lb);
	e_msg(&svc, 3, &st);
	e_body(&body, "v1", "Service", &svc);
	check_decode(&body,
		"{'kind':'Service','apiVersion':'v1','metadata':{'name':'web',"
		"'creationTimestamp':null,'labels':{'app':'web'}},'spec':{'ports':["
		"{'name':'http','protocol':'TCP','port':80,'targetPort':8080},"
		"{'name':'metrics','protocol':'TCP','port':9090,'targetPort':'metrics',"
		"'nodePort':30090}],'selector':{'app':'web'},'type':'NodePort',"
		"'clusterIPs':['10.0.0.1'],'ipFamilies':['IPv4'],'internalTrafficPolicy':'Cluster'},"
		"'status':{'loadBalancer':{}}}", "service");
	buf_release(&body);
}

static void e_container(struct buf *spec, uint32_t num)
{
	struct buf c = BUF_INIT, port = BUF_INIT, env1 = BUF_INIT, env2 = BUF_INIT,
		   env3 = BUF_INIT, env4 = BUF_INIT, vf = BUF_INIT, ref = BUF_INIT,
		   res = BUF_INIT, vm = BUF_INIT, probe = BUF_INIT, hg = BUF_INIT,
		   ios = BUF_INIT, probe2 = BUF_INIT, ex = BUF_INIT, sc = BUF_INIT,
		   caps = BUF_INIT, lor = BUF_INIT;

	e_str(&c, 1, "app");
	e_str(&c, 2, "busybox:1.36");
	e_str(&c, 3, "sh");
	e_str(&c, 3, "-c");
	e_str(&c, 4, "sleep 3600");
	e_str(&c, 5, "/work");
	e_str(&port, 1, "http");
	e_int(&port, 2, 0);
	e_int(&port, 3, 8080);
	e_str(&port, 4, "TCP");
	e_msg(&c, 6, &port);
	e_str(&env1, 1, "FOO");
	e_str(&env1, 2, "bar");
	e_msg(&c, 7, &env1);
	e_str(&env2, 1, "POD_IP");
	e_str(&ref, 1, "v1");
	e_str(&ref, 2, "status.podIP");
	e_msg(&vf, 1, &ref);
	e_msg(&env2, 3, &vf);
	e_msg(&c, 7, &env2);
	e_str(&env3, 1, "PW");
	e_str(&lor, 1, "creds");
	e_msg(&ref, 1, &lor);         /* LocalObjectReference is inlined into the selector */
	e_str(&ref, 2, "password");
	e_msg(&vf, 4, &ref);
	e_msg(&env3, 3, &vf);
	e_msg(&c, 7, &env3);
	e_str(&env4, 1, "LEVEL");
	e_str(&lor, 1, "cfg");
	e_msg(&ref, 1, &lor);
	e_str(&ref, 2, "level");
	e_int(&ref, 3, 1);
	e_msg(&vf, 3, &ref);
	e_msg(&env4, 3, &vf);
	e_msg(&c, 7, &env4);
	e_qmap(&res, 1, "cpu", "500m");
	e_qmap(&res, 1, "memory", "128Mi");
	e_qmap(&res, 2, "cpu", "100m");
	e_msg(&c, 8, &res);
	e_str(&vm, 1, "data");
	e_int(&vm, 2, 1);
	e_str(&vm, 3, "/data");
	e_msg(&c, 9, &vm);
	e_str(&hg, 1, "/healthz");
	e_int(&ios, 1, 1);
	e_str(&ios, 3, "http");
	e_msg(&hg, 2, &ios);
	e_msg(&probe, 2, &hg);        /* ProbeHandler (field 1) holds httpGet */
	e_msg(&probe2, 1, &probe);
	e_int(&probe2, 2, 5);
	e_int(&probe2, 4, 10);
	e_msg(&c, 10, &probe2);
	e_str(&ex, 1, "true");
	e_msg(&probe, 1, &ex);
	e_msg(&probe2, 1, &probe);
	e_int(&probe2, 6, 3);
	e_msg(&c, 11, &probe2);
	e_str(&c, 13, "/dev/termination-log");
	e_str(&c, 14, "IfNotPresent");
	e_str(&caps, 2, "ALL");
	e_msg(&sc, 1, &caps);
	e_int(&sc, 4, 1000);
	e_int(&sc, 7, 0);             /* pointer bool false is kept */
	e_msg(&c, 15, &sc);
	e_str(&c, 20, "File");
	e_msg(spec, num, &c);
}

static void test_pod(void **state)
{
	struct buf pod = BUF_INIT, spec = BUF_INIT, init = BUF_INIT, vol = BUF_INIT, src = BUF_INIT,
		   ed = BUF_INIT, tol = BUF_INIT, aff = BUF_INIT, na = BUF_INIT, ns = BUF_INIT,
		   term = BUF_INIT, req = BUF_INIT, psc = BUF_INIT, tsc = BUF_INIT, ls = BUF_INIT,
		   body = BUF_INIT, q = BUF_INIT, vol2 = BUF_INIT, cmv = BUF_INIT, lor = BUF_INIT,
		   vol3 = BUF_INIT, secv = BUF_INIT, kp = BUF_INIT;

	e_meta(&pod, 1, "p1", "app", "p1", NULL);
	e_str(&ed, 1, "Memory");
	e_str(&q, 1, "1Gi");
	e_msg(&ed, 2, &q);
	e_msg(&src, 2, &ed);
	e_str(&vol, 1, "data");
	e_msg(&vol, 2, &src);         /* VolumeSource is inlined into Volume */
	e_msg(&spec, 1, &vol);
	e_str(&vol2, 1, "conf");
	e_str(&lor, 1, "app-config");
	e_msg(&cmv, 1, &lor);
	e_int(&cmv, 3, 0644);
	e_msg(&src, 19, &cmv);
	e_msg(&vol2, 2, &src);
	e_msg(&spec, 1, &vol2);
	e_str(&vol3, 1, "creds");
	e_str(&secv, 1, "creds");
	e_str(&kp, 1, "password");
	e_str(&kp, 2, "pw.txt");
	e_msg(&secv, 2, &kp);
	e_msg(&src, 6, &secv);
	e_msg(&vol3, 2, &src);
	e_msg(&spec, 1, &vol3);
	e_container(&spec, 2);
	e_str(&init, 1, "init");
	e_str(&init, 2, "busybox");
	e_msg(&spec, 20, &init);
	e_str(&spec, 3, "Always");
	e_int(&spec, 4, 30);
	e_str(&spec, 6, "ClusterFirst");
	e_map(&spec, 7, "disk", "ssd");
	e_str(&spec, 8, "robot");
	e_str(&spec, 10, "node-1");
	e_int(&spec, 11, 1);
	e_msg(&spec, 14, &psc);       /* securityContext {} */
	e_str(&spec, 19, "default-scheduler");
	e_str(&tol, 1, "node.kubernetes.io/not-ready");
	e_str(&tol, 2, "Exists");
	e_str(&tol, 4, "NoExecute");
	e_int(&tol, 5, 300);
	e_msg(&spec, 22, &tol);
	e_str(&req, 1, "zone");
	e_str(&req, 2, "In");
	e_str(&req, 3, "a");
	e_str(&req, 3, "b");
	e_msg(&term, 1, &req);
	e_msg(&ns, 1, &term);
	e_msg(&na, 1, &ns);
	e_msg(&aff, 1, &na);
	e_msg(&spec, 18, &aff);
	e_int(&spec, 25, -5);         /* negative int32: 10-byte varint */
	e_int(&tsc, 1, 1);
	e_str(&tsc, 2, "kubernetes.io/hostname");
	e_str(&tsc, 3, "DoNotSchedule");
	e_map(&ls, 1, "app", "p1");
	e_msg(&tsc, 4, &ls);
	e_msg(&spec, 33, &tsc);
	e_msg(&pod, 2, &spec);
	e_body(&body, "v1", "Pod", &pod);
	check_decode(&body,
		"{'kind':'Pod','apiVersion':'v1','metadata':{'name':'p1','creationTimestamp':null,"
		"'labels':{'app':'p1'}},'spec':{"
		"'volumes':[{'name':'data','emptyDir':{'medium':'Memory','sizeLimit':'1Gi'}},"
		"{'name':'conf','configMap':{'name':'app-config','defaultMode':420}},"
		"{'name':'creds','secret':{'secretName':'creds','items':[{'key':'password',"
		"'path':'pw.txt'}]}}],"
		"'containers':[{'name':'app','image':'busybox:1.36','command':['sh','-c'],"
		"'args':['sleep 3600'],'workingDir':'/work',"
		"'ports':[{'name':'http','containerPort':8080,'protocol':'TCP'}],"
		"'env':[{'name':'FOO','value':'bar'},"
		"{'name':'POD_IP','valueFrom':{'fieldRef':{'apiVersion':'v1','fieldPath':'status.podIP'}}},"
		"{'name':'PW','valueFrom':{'secretKeyRef':{'name':'creds','key':'password'}}},"
		"{'name':'LEVEL','valueFrom':{'configMapKeyRef':{'name':'cfg','key':'level',"
		"'optional':true}}}],"
		"'resources':{'limits':{'cpu':'500m','memory':'128Mi'},'requests':{'cpu':'100m'}},"
		"'volumeMounts':[{'name':'data','readOnly':true,'mountPath':'/data'}],"
		"'livenessProbe':{'httpGet':{'path':'/healthz','port':'http'},"
		"'initialDelaySeconds':5,'periodSeconds':10},"
		"'readinessProbe':{'exec':{'command':['true']},'failureThreshold':3},"
		"'terminationMessagePath':'/dev/termination-log','imagePullPolicy':'IfNotPresent',"
		"'securityContext':{'capabilities':{'drop':['ALL']},'runAsUser':1000,"
		"'allowPrivilegeEscalation':false},'terminationMessagePolicy':'File'}],"
		"'initContainers':[{'name':'init','image':'busybox'}],"
		"'restartPolicy':'Always','terminationGracePeriodSeconds':30,'dnsPolicy':'ClusterFirst',"
		"'nodeSelector':{'disk':'ssd'},'serviceAccountName':'robot','nodeName':'node-1',"
		"'hostNetwork':true,'securityContext':{},'schedulerName':'default-scheduler',"
		"'tolerations':[{'key':'node.kubernetes.io/not-ready','operator':'Exists',"
		"'effect':'NoExecute','tolerationSeconds':300}],"
		"'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
		"{'nodeSelectorTerms':[{'matchExpressions':[{'key':'zone','operator':'In',"
		"'values':['a','b']}]}]}}},'priority':-5,"
		"'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'kubernetes.io/hostname',"
		"'whenUnsatisfiable':'DoNotSchedule','labelSelector':{'matchLabels':{'app':'p1'}}}]}}",
		"pod");
	buf_release(&body);
}

/* Arktos ObjectMeta fields, times, owner references, annotations and finalizers. */
static void test_object_meta(void **state)
{
	struct buf cm = BUF_INIT, m = BUF_INIT, ts = BUF_INIT, own = BUF_INIT, body = BUF_INIT;

	e_str(&m, 1, "x");
	e_str(&m, 3, "ns1");
	e_str(&m, 5, "uid-1");
	e_str(&m, 6, "42");
	e_int(&m, 7, 3);
	e_int(&ts, 1, 1767323045);    /* 2026-01-02T03:04:05Z */
	e_int(&ts, 2, 999);           /* Time keeps whole seconds only */
	e_msg(&m, 8, &ts);
	e_int(&ts, 1, -62135596800);  /* 0001-01-01T00:00:00Z */
	e_msg(&m, 9, &ts);
	e_int(&m, 10, 0);
	e_map(&m, 12, "note", "a\"b");
	e_str(&own, 5, "apps/v1");
	e_str(&own, 1, "ReplicaSet");
	e_str(&own, 3, "rs");
	e_str(&own, 4, "u2");
	e_int(&own, 6, 1);
	e_msg(&m, 13, &own);
	e_str(&m, 14, "example.com/f");
	e_str(&m, 18, "tenant-a");
	e_int(&m, 19, 8106528155458025591LL);
	e_msg(&cm, 1, &m);
	e_body(&body, "v1", "ConfigMap", &cm);
	check_decode(&body,
		"{'kind':'ConfigMap','apiVersion':'v1','metadata':{'name':'x','namespace':'ns1',"
		"'uid':'uid-1','resourceVersion':'42','generation':3,"
		"'creationTimestamp':'2026-01-02T03:04:05Z',"
		"'deletionTimestamp':'0001-01-01T00:00:00Z','deletionGracePeriodSeconds':0,"
		"'annotations':{'note':'a\\'b'},'ownerReferences':[{'apiVersion':'apps/v1',"
		"'kind':'ReplicaSet','name':'rs','uid':'u2','controller':true}],"
		"'finalizers':['example.com/f'],'tenant':'tenant-a',"
		"'hashKey':8106528155458025591}}", "object meta");
	buf_release(&body);
}

static void test_lease_microtime(void **state)
{
	struct buf l = BUF_INIT, spec = BUF_INIT, t = BUF_INIT, body = BUF_INIT;

	e_meta(&l, 1, "node-1", NULL);
	e_str(&spec, 1, "node-1");
	e_int(&spec, 2, 40);
	e_int(&t, 1, 951782400);      /* 2000-02-29T00:00:00Z */
	e_int(&t, 2, 123456789);
	e_msg(&spec, 4, &t);
	e_int(&spec, 5, 0);
	e_msg(&l, 2, &spec);
	e_body(&body, "coordination.k8s.io/v1", "Lease", &l);
	check_decode(&body,
		"{'kind':'Lease','apiVersion':'coordination.k8s.io/v1','metadata':{'name':'node-1',"
		"'creationTimestamp':null},'spec':{'holderIdentity':'node-1',"
		"'leaseDurationSeconds':40,'renewTime':'2000-02-29T00:00:00.123456Z',"
		"'leaseTransitions':0}}", "lease");
	buf_release(&body);
}

static void test_event_node_binding(void **state)
{
	struct buf ev = BUF_INIT, ref = BUF_INIT, src = BUF_INIT, t = BUF_INIT, body = BUF_INIT,
		   node = BUF_INIT, spec = BUF_INIT, taint = BUF_INIT, b = BUF_INIT;

	e_meta(&ev, 1, "p1.1", NULL);
	e_str(&ref, 1, "Pod");
	e_str(&ref, 3, "p1");
	e_msg(&ev, 2, &ref);
	e_str(&ev, 3, "Scheduled");
	e_str(&ev, 4, "assigned");
	e_str(&src, 1, "scheduler");
	e_msg(&ev, 5, &src);
	e_int(&t, 1, 0);
	e_msg(&ev, 6, &t);            /* epoch, not zero: encoded bytes are not empty */
	e_bytes(&ev, 7, "", 0);
	e_int(&ev, 8, 1);
	e_str(&ev, 9, "Normal");
	e_bytes(&ev, 10, "", 0);
	e_body(&body, "v1", "Event", &ev);
	check_decode(&body,
		"{'kind':'Event','apiVersion':'v1','metadata':{'name':'p1.1',"
		"'creationTimestamp':null},'involvedObject':{'kind':'Pod','name':'p1'},"
		"'reason':'Scheduled','message':'assigned','source':{'component':'scheduler'},"
		"'firstTimestamp':'1970-01-01T00:00:00Z','lastTimestamp':null,'count':1,"
		"'type':'Normal','eventTime':null}", "event");
	buf_release(&body);

	e_meta(&node, 1, "node-1", NULL);
	e_str(&spec, 1, "10.244.1.0/24");
	e_str(&spec, 7, "10.244.1.0/24");
	e_int(&spec, 4, 1);
	e_str(&taint, 1, "dedicated");
	e_str(&taint, 2, "db");
	e_str(&taint, 3, "NoSchedule");
	e_msg(&spec, 5, &taint);
	e_msg(&node, 2, &spec);
	e_bytes(&node, 3, "\x0a\x02\x08\x01", 4);   /* status content is not decoded */
	e_body(&body, "v1", "Node", &node);
	check_decode(&body,
		"{'kind':'Node','apiVersion':'v1','metadata':{'name':'node-1',"
		"'creationTimestamp':null},'spec':{'podCIDR':'10.244.1.0/24',"
		"'podCIDRs':['10.244.1.0/24'],'unschedulable':true,'taints':[{'key':'dedicated',"
		"'value':'db','effect':'NoSchedule'}]},'status':{}}", "node");
	buf_release(&body);

	e_meta(&b, 1, "p1", NULL);
	e_str(&ref, 1, "Node");
	e_str(&ref, 3, "node-1");
	e_msg(&b, 2, &ref);
	e_body(&body, "v1", "Binding", &b);
	check_decode(&body,
		"{'kind':'Binding','apiVersion':'v1','metadata':{'name':'p1',"
		"'creationTimestamp':null},'target':{'kind':'Node','name':'node-1'}}", "binding");
	buf_release(&body);
}

static void test_workloads(void **state)
{
	struct buf o = BUF_INIT, spec = BUF_INIT, sel = BUF_INIT, tmpl = BUF_INIT, body = BUF_INIT,
		   us = BUF_INIT, pvc = BUF_INIT, pspec = BUF_INIT, res = BUF_INIT, expr = BUF_INIT;

	e_meta(&o, 1, "rs", NULL);
	e_int(&spec, 1, 3);
	e_str(&expr, 1, "tier");
	e_str(&expr, 2, "Exists");
	e_msg(&sel, 2, &expr);
	e_msg(&spec, 2, &sel);
	e_meta(&tmpl, 1, NULL, NULL);
	e_msg(&spec, 3, &tmpl);
	e_msg(&o, 2, &spec);
	e_body(&body, "apps/v1", "ReplicaSet", &o);
	check_decode(&body,
		"{'kind':'ReplicaSet','apiVersion':'apps/v1','metadata':{'name':'rs',"
		"'creationTimestamp':null},'spec':{'replicas':3,'selector':{'matchExpressions':"
		"[{'key':'tier','operator':'Exists'}]},'template':{'metadata':"
		"{'creationTimestamp':null}}}}", "replicaset");
	buf_release(&body);

	e_meta(&o, 1, "ds", NULL);
	e_str(&us, 1, "OnDelete");
	e_msg(&spec, 3, &us);
	e_int(&spec, 6, 0);
	e_msg(&o, 2, &spec);
	e_body(&body, "apps/v1", "DaemonSet", &o);
	check_decode(&body,
		"{'kind':'DaemonSet','apiVersion':'apps/v1','metadata':{'name':'ds',"
		"'creationTimestamp':null},'spec':{'updateStrategy':{'type':'OnDelete'},"
		"'revisionHistoryLimit':0}}", "daemonset");
	buf_release(&body);

	e_meta(&o, 1, "db", NULL);
	e_int(&spec, 1, 1);
	e_meta(&pvc, 1, "data", NULL);
	e_str(&pspec, 1, "ReadWriteOnce");
	e_qmap(&res, 2, "storage", "1Gi");
	e_msg(&pspec, 2, &res);
	e_msg(&pvc, 2, &pspec);
	e_msg(&spec, 4, &pvc);
	e_str(&spec, 5, "db");
	e_msg(&o, 2, &spec);
	e_body(&body, "apps/v1", "StatefulSet", &o);
	check_decode(&body,
		"{'kind':'StatefulSet','apiVersion':'apps/v1','metadata':{'name':'db',"
		"'creationTimestamp':null},'spec':{'replicas':1,'volumeClaimTemplates':[{'metadata':"
		"{'name':'data','creationTimestamp':null},'spec':{'accessModes':['ReadWriteOnce'],"
		"'resources':{'requests':{'storage':'1Gi'}}}}],'serviceName':'db'}}", "statefulset");
	buf_release(&body);
}

/* Fields the schema does not know are skipped whatever their wire type; packed repeated
 * varints are accepted; a singular message that occurs twice is merged. */
static void test_unknown_packed_merge(void **state)
{
	struct buf pod = BUF_INIT, spec = BUF_INIT, psc = BUF_INIT, packed = BUF_INIT,
		   body = BUF_INIT;

	e_meta(&pod, 1, "p", NULL);
	e_int(&pod, 99, 7);
	e_tag(&pod, 98, 1);
	buf_add(&pod, "12345678", 8);
	e_tag(&pod, 97, 5);
	buf_add(&pod, "1234", 4);
	e_str(&pod, 96, "ignored");
	e_int(&psc, 2, 1000);
	e_varint(&packed, 5);
	e_varint(&packed, 6);
	e_bytes(&psc, 4, packed.ptr, packed.len);
	buf_release(&packed);
	e_int(&psc, 4, 7);
	e_msg(&spec, 14, &psc);
	e_int(&psc, 6, 2000);
	e_msg(&spec, 14, &psc);
	e_msg(&pod, 2, &spec);
	e_body(&body, "v1", "Pod", &pod);
	check_decode(&body,
		"{'kind':'Pod','apiVersion':'v1','metadata':{'name':'p','creationTimestamp':null},"
		"'spec':{'securityContext':{'runAsUser':1000,'supplementalGroups':[5,6,7],"
		"'runAsGroup':2000}}}", "unknown/packed/merge");
	buf_release(&body);
}

static void test_kinds_table(void **state)
{
	static const char *const kinds[][2] = {
		{ "apps/v1", "Deployment" }, { "apps/v1", "ReplicaSet" }, { "apps/v1", "DaemonSet" },
		{ "apps/v1", "StatefulSet" }, { "v1", "Pod" }, { "v1", "Namespace" },
		{ "v1", "ConfigMap" }, { "v1", "Secret" }, { "v1", "ServiceAccount" },
		{ "v1", "Service" }, { "v1", "Event" }, { "v1", "Node" }, { "v1", "Binding" },
		{ "batch/v1", "Job" }, { "coordination.k8s.io/v1", "Lease" },
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!k8s_protobuf_has_kind(kinds[i][0], kinds[i][1]))
			fail_msg("missing %s %s", kinds[i][0], kinds[i][1]);
	assert_false(k8s_protobuf_has_kind("v1", "Deployment"));
	assert_false(k8s_protobuf_has_kind("apps/v1", "Pod"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deployment),
		cmocka_unit_test(test_deployment_rolling_update),
		cmocka_unit_test(test_namespace),
		cmocka_unit_test(test_configmap),
		cmocka_unit_test(test_secret),
		cmocka_unit_test(test_service),
		cmocka_unit_test(test_pod),
		cmocka_unit_test(test_object_meta),
		cmocka_unit_test(test_lease_microtime),
		cmocka_unit_test(test_event_node_binding),
		cmocka_unit_test(test_workloads),
		cmocka_unit_test(test_unknown_packed_merge),
		cmocka_unit_test(test_kinds_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
