# What /output/run.trec becomes; each case is one line of tests/sandbox/test_output_tricks.py.
set -u
trick=$(cat /input/trick 2>/dev/null || echo link-self-env)  # the platform writes no trick: the worker's environment
cd /output
case "$trick" in
  link-host-file)  ln -s /tmp/lexboard-sandbox-canary.txt run.trec ;;
  link-self-env)   ln -s /proc/self/environ run.trec ;;
  link-pid1-env)   ln -s /proc/1/environ run.trec ;;
  link-root)       ln -s / run.trec ;;
  link-input)      ln -s ../../input/topics.jsonl run.trec ;;
  link-dotdot)     mkdir -p sub && ln -s .. sub/up && ln -s sub/up/../../../tmp/lexboard-sandbox-canary.txt run.trec ;;
  hard-link)       printf 'q1 Q0 art-1 1 1.0 t\n' > first && ln first run.trec ;;
  fifo)            mkfifo run.trec ;;
  device)          mknod run.trec c 1 3 2>/dev/null || cp -a /dev/zero run.trec 2>/dev/null || ln -s /dev/zero run.trec ;;
  folder)          mkdir run.trec && printf 'q1 Q0 art-1 1 1.0 t\n' > run.trec/run.trec ;;
  sparse)          truncate -s 10G run.trec ;;
  *)               echo "unknown trick $trick" >&2; exit 2 ;;
esac
ls -la /output >&2
exit 0
