"""Side by side with the real htcondor2.Submit on many small descriptions.

Each snippet is parsed by both; keys, values, str(), the queue arguments,
expand() of every key (and of the extra names listed) and itemdata() must
agree.  Where htcondor2 raises we must raise an exception of a compatible
built-in type.  Runs in the oracle corpus folder (for files and globs).
"""

from __future__ import annotations

import pytest

from jobledger import Submit

htcondor2 = pytest.importorskip("htcondor2")
pytestmark = pytest.mark.oracle

EXTRA = ["Cluster", "ClusterId", "ProcId", "Process", "Step", "Row", "ItemIndex", "Item", "JobId",
         "DOLLAR", "ARCH", "OPSYS", "IsLinux", "nope"]

SNIPPETS = [
    # assignments, case, spacing
    "a = 1\nA = 2\nb=3\n  c  =  x y  \n",
    "x = 1\nx = $(x) 2\nx = $(x) 3\n",
    "x = $(x:start) more\n",
    "a = one\\\ntwo\nb = one \\\n\ttwo\nc = x\\  \nd = y\n",
    "e = p \\\n\nf = q\n",
    "three = double\\\\\nfour = x\n",
    "a = x # not a comment\n# comment\n   # indented comment\nb = 2\n",
    "x @=END\n  line1\n\n# dropped\n  line2  \n@END\ny = $(x)\n",
    "+Foo = \"bar\"\nMY.Baz = 3\nmy.low = true\n+Expr = $(Foo) + 1\n",
    "empty =\nref = $(empty)\nd = $(empty:dflt)\n",
    "1bad = 1\na.b = 2\nc_d = $(a.b)\n",
    # references and defaults
    "a = x\nr1 = $(A)y\nr2 = $(undefined:dflt)\nr3 = $(a:dflt)\nr4 = $(u:a b c)\nr5 = $(u:$(v:deep))\n",
    "r1 = $(u:a-b)\nr2 = $(a-b)\nr3 = $(u:a/b)\nr4 = $(u:a,b)\nr5 = $(u:x:y)\nr6 = $(u:(p)q)\n",
    "r1 = $$(Memory)\nr2 = $$(OpSys:linux)\nr3 = $$([Memory * 2])\nr4 = $(DOLLAR)x\nr5 = $(dollar)(y)\n",
    "r1 = $(\nr2 = $(x\nr3 = $)\nr4 = $\nr5 = $$\nr6 = $$$(x)\nx = 1\n",
    "a = $(b)\nb = $(c)\nc = $(d)\nd = end\n",
    "r = $(ProcId).$(Cluster).$(Step).$(Row).$(ItemIndex).$(JobId)\n",
    # environment
    "e1 = $ENV(ORACLE_ENV_VAR)\ne2 = $ENV(ORACLE_ENV_UNSET)\ne3 = $ENV(ORACLE_ENV_UNSET:d)\n"
    "e4 = $ENV(ORACLE_ENV_UNSET:a-b)\ne5 = $ENV(ORACLE_ENV_PATH:x)\n",
    # functions
    "N = 7\nM = 2.5\nS = 3+4\ni1 = $INT(N)\ni2 = $INT(N,%03d)\ni3 = $INT(S)\ni4 = $INT(M)\ni5 = $INT(12)\n"
    "r1 = $REAL(N)\nr2 = $REAL(M)\nr3 = $REAL(M,%.3f)\nr4 = $REAL(N,%.0f)\n",
    "w = hello\ns1 = $SUBSTR(w,1)\ns2 = $SUBSTR(w,-3,2)\ns3 = $SUBSTR(w,1,-1)\ns4 = $SUBSTR(w,0,2)\n"
    "s5 = $SUBSTR(w,-10)\ns6 = $SUBSTR(nosuch,1)\n",
    "lst = a,b, c\nc1 = $CHOICE(1,x,y,z)\nc2 = $CHOICE(2,lst)\nc3 = $CHOICE(Step,p,q)\nc4 = $CHOICE(ProcId,lst)\n"
    "c5 = $CHOICE(9,x,y)\n",
    "p = /x/y/z.tar.gz\nf1 = $Fn(p)\nf2 = $Fx(p)\nf3 = $Fp(p)\nf4 = $Fnx(p)\nf5 = $Fd(p)\nf6 = $Fdb(p)\n"
    "f7 = $Fq(p)\nf8 = $Fqa(p)\nf9 = $Fpn(p)\nf10 = $Fxb(p)\nf11 = $Fdd(p)\nf12 = $Fn(plain.txt)\n"
    "f13 = $Fp(plain.txt)\nf14 = $Fw(p)\nf15 = $F(p)\n",
    "b1 = $BASENAME(/a/b/c.txt)\nb2 = $DIRNAME(/a/b/c.txt)\nb3 = $BASENAME(/a/b/c.txt,.txt)\n",
    "v1 = $EVAL(1+2)\nv2 = $EVAL(x)\nx = 2*3\nv3 = $EVAL(\"s\")\nv4 = $EVAL(1.5*2)\nv5 = $EVAL(undefined)\n",
    "v6 = $EVAL(1 +)\n", "v7 = $EVAL()\n", "v8 = $EVAL(\"open)\n", "v9 = $EVAL(1/0)\n",
    "s1 = $STRING(x)\nx = \"quoted\"\ns2 = $STRING(y)\ny = plain\n",
    "u1 = $UNKNOWN(x)\nu2 = $Fz(x)\nu3 = $int(N)\nN = 1\n",
    # conditionals and include
    "m = 1\nif defined m\n a = yes\nelse\n a = no\nendif\nif ! defined m\n b = 1\nendif\n",
    "if false\n a = 1\nelif true\n a = 2\nelse\n a = 3\nendif\nif 0\n b = 1\nendif\nif 2\n c = 1\nendif\n",
    "x = true\nif $(x)\n a = 1\nendif\nif version >= 8.0\n b = 1\nendif\nif version < 9.0.0\n c = 1\nendif\n",
    "if true\n if false\n  a = 1\n else\n  a = 2\n endif\nendif\n",
    "include : shared_include.inc\nafter = $(included_value)\n",
    "e =\nif defined e\n a=1\nendif\nif defined ProcId\n b=1\nendif\nif defined ARCH\n c=1\nendif\n",
    "y=1\nx=y\nif defined $(x)\n a=1\nendif\nif $(IsLinux)\n b=1\nendif\nif $(ProcId)\n c=1\nendif\n",
    "if version >= 25\n a=1\nendif\n", "if not true\n a=1\nendif\n",
    # queue statements
    "a = 1\nqueue\n", "a = 1\nqueue 5\n", "a = 1\nqueue 2 * 3\n", "n = 4\nqueue $(n)\n",
    "a = 1\nqueue x in (p q, r)\n", "a = 1\nqueue x in p q r\n", "a = 1\nQUEUE X IN (p)\n",
    "a = 1\nqueue x,y in (p q)\n", "a = 1\nqueue in (p q)\n",
    "a = 1\nqueue 3 x in (\n  p\n# c\n  q r\n)\nignored = 1\n",
    "a = 1\nqueue x,y from (\n 1 2\n 3,4\n 5\n)\n",
    "a = 1\nqueue x,y,z from (\n 16 , 17 , 18\n 10, 11\n a b c d\n)\n",
    "a = 1\nqueue x from (a b)\n",
    "a = 1\nqueue name,size from shared_items.txt\n",
    "a = 1\nqueue f matching shared_inputs/*\n",
    "a = 1\nqueue f matching files shared_inputs/*\n",
    "a = 1\nqueue f matching dirs shared_inputs/*\n",
    "a = 1\nqueue f matching (shared_inputs/*.txt shared_inputs/*.log)\n",
    "a = 1\nqueue x in [1:3] (a b c d)\n", "a = 1\nqueue x in [::2] (a b c d)\n",
    "a = 1\nqueue x in [-1] (a b c)\n",
    "lst = p q r\nqueue x in ($(lst))\n",
    "a = 1\nqueue -1\n", "a = 1\nqueue abc\n", "a = 1\nqueue 0\n",
    "a = 1\nqueue x from no_such_file.txt\n", "a = 1\nqueue x in (a) tail\n",
    "a = 1\nqueue x in [bad] (a)\n", "a = 1\nqueue x from (\n a\n\n b\n)\n",
    "a = 1\nqueue 2\nb = 2\nqueue 3\n",
    "a = 1\nqueue x,y from shared_items.txt\n", "a = 1\nqueue 2 x from [1:] shared_items.txt\n",
    "a = 1\nqueue x in (a,,b)\n", "a = 1\nqueue\tx in (a)\n", "a = 1\nqueue   x   in   (  a  )\n",
    "a = 1\nqueue 2 x,y from (\n1 2\n)\n", "a = 1\r\nb = 2\r\nqueue 2\r\n",
    "a = x\\", "a = x\\\n", "a = x\\\nqueue\n", "a = x\\\n  # c\n",
    "r1 = $RANDOM_INTEGER(5,5)\nr2 = $RANDOM_CHOICE(z)\nr3 = $(x:)\nr4 = $ENV(:d)\n",
    "x @=End\n a\n@end\n@End\n", "a\t=\t1\n\tb =2\n",
    # syntax errors
    "a b\n", "a : 1\n", "a := 1\n", "= 1\n", "if true\na = 1\n", "endif\n", "else\n",
    "if $(x) > 2\na = 1\nendif\n", "include shared_include.inc\n", "x @=END\nline\n", "queue = 3\n",
    "queue=3\n", "if = 3\n", "if=3\n", "include = 3\n", "else = 3\n", "a = 1\nqueue x = 3\n",
]


def _run(fn):
    """("ok", value) or ("error", the built-in exception type it is)."""
    try:
        return ("ok", fn())
    except KeyError:
        return ("error", "KeyError")
    except ValueError:
        return ("error", "ValueError")
    except TypeError:
        return ("error", "TypeError")


def _rows(sub):
    it = sub.itemdata()
    return None if it is None else [dict(r) for r in it]


@pytest.mark.parametrize("text", SNIPPETS, ids=range(len(SNIPPETS)))
def test_same_as_htcondor2(text, in_corpus):
    theirs = _run(lambda: htcondor2.Submit(text))
    ours = _run(lambda: Submit(text))
    assert ours[0] == theirs[0], (ours, theirs)
    if theirs[0] == "error":
        assert ours[1] == theirs[1]
        return
    t, o = theirs[1], ours[1]
    assert list(o.keys()) == list(t.keys())
    assert dict(o) == dict(t)
    assert str(o) == str(t)
    assert o.getQArgs() == t.getQArgs()
    for name in list(t.keys()) + EXTRA:
        assert _run(lambda: o.expand(name)) == _run(lambda: t.expand(name)), name
    assert _run(lambda: _rows(o)) == _run(lambda: _rows(t))
