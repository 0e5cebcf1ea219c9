"""The ClassAd and ExprTree types under a name that says which API they implement.

``str(type(ad))`` is ``<class 'classad2._class_ad.ClassAd'>`` in HTCondor's v2 bindings
and ``<class 'classad.ClassAd'>`` in v1's; programs (HTCondor's own tests among them)
tell v2's semantics (aware datetimes, nested ads as ClassAds) from v1's by that name.
jobledger implements v2's, so its types print as ``<class '...classad2.ClassAd'>``;
pickles name this module, which holds both.
"""

from .ad import ClassAd, ExprTree

for _type in (ClassAd, ExprTree):
    _type.__module__ = __name__

__all__ = ["ClassAd", "ExprTree"]
